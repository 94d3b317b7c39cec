'use strict';
// What no schema can check: that the manifests agree with each other and
// with irontuned and irontune-client. Each check calls fail(doc, message).

const path = require('path');
const M = require('./manifests');

const POWER_MODES = ['default', 'powersaver', 'balanced', 'performance', 'turbo'];
const NAMESPACE = 'irontune';
// What NPU nodes carry (docs/kubernetes.md, "The nodes").
const NPU_TAINT = {key: 'irontune.io/npu', effect: 'NoSchedule'};
// irontuned flags whose values are files the container must have.
const DAEMON_FILE_FLAGS = ['--tls-cert', '--tls-key', '--tls-client-ca',
  '--tokens', '--fleet-password-file', '--kernel-cycles', '--config'];
const CLIENT_FILE_FLAGS = ['--tls-ca', '--tls-cert', '--tls-key', '--token-file'];
// The front's flags (docs/fleet.md, "Not built yet"): taken as given while
// the irontuned under test does not list them, checked once it does.
const PENDING_DAEMON_FLAGS = new Map([
  ['--role', {takesValue: true, choices: ['front']}],
  ['--fleet-platform', {takesValue: true, choices: null}],
]);

function tolerates(spec, taint) {
  return (spec.tolerations || []).some((t) =>
    (t.key === taint.key || (t.key === undefined && t.operator === 'Exists')) &&
    (t.effect === undefined || t.effect === taint.effect) &&
    (t.operator === 'Exists' || t.value !== undefined));
}

// $(VAR) expanded from the container's env: literal values and ConfigMap
// keys. null where a reference cannot be resolved.
function expand(inv, ns, c, text) {
  let ok = true;
  const out = String(text).replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name) => {
    const e = M.envOf(c, name);
    if (!e) {
      ok = false;
      return all;
    }
    if (e.value !== undefined) return e.value;
    const ref = e.valueFrom && e.valueFrom.configMapKeyRef;
    const cm = ref && inv.find('ConfigMap', ref.name, ns);
    if (cm && cm.obj.data && cm.obj.data[ref.key] !== undefined) return cm.obj.data[ref.key];
    ok = false;
    return all;
  });
  return ok ? out : null;
}

// The keys a volume holds (Secret or ConfigMap), or null when it is not
// one (emptyDir, hostPath...).
function volumeKeys(inv, ns, volume) {
  if (!volume) return null;
  const src = volume.secret ? inv.find('Secret', volume.secret.secretName, ns)
    : volume.configMap ? inv.find('ConfigMap', volume.configMap.name, ns) : undefined;
  if (src === undefined) return null;
  if (!src) return new Set();
  const keys = new Set([...Object.keys(src.obj.data || {}),
                        ...Object.keys(src.obj.stringData || {})]);
  const items = (volume.secret || volume.configMap).items;
  return items ? new Set(items.filter((i) => keys.has(i.key)).map((i) => i.path)) : keys;
}

function runChecks(docs, ctx) {
  const inv = new M.Inventory(docs);
  const {fail} = ctx;
  const ns = NAMESPACE;

  // -- Namespaces: every namespaced object in irontune, which exists.
  if (!inv.find('Namespace', ns)) fail(null, `no Namespace ${ns}`);
  for (const d of docs) {
    const kind = d.obj.kind;
    if (kind === 'Kustomization') continue;
    const meta = d.obj.metadata || {};
    if (M.CLUSTER_SCOPED.has(kind)) {
      if (meta.namespace !== undefined) fail(d, `${kind} is cluster-scoped: no metadata.namespace`);
    } else if (meta.namespace !== ns) {
      fail(d, `metadata.namespace must be ${ns} (kubectl apply -f works without kustomize)`);
    }
  }
  // Names are unique per kind.
  const seen = new Map();
  for (const d of docs.filter((x) => x.obj.kind !== 'Kustomization')) {
    const key = `${d.obj.kind}/${d.obj.metadata && d.obj.metadata.namespace}/${d.obj.metadata && d.obj.metadata.name}`;
    if (seen.has(key)) fail(d, `a second ${d.obj.kind} of this name (first: ${M.describe(seen.get(key))})`);
    else seen.set(key, d);
  }

  // -- Workloads: selectors select their own pods and no one else's.
  const workloads = inv.workloads();
  for (const w of workloads) {
    if (!M.labelsMatch(w.obj.spec.selector, M.podLabels(w))) {
      fail(w, 'spec.selector does not match the pod template\'s labels');
    }
    for (const other of workloads) {
      if (other !== w && M.labelsMatch(w.obj.spec.selector, M.podLabels(other))) {
        fail(w, `spec.selector also selects the pods of ${M.describe(other)}`);
      }
    }
  }

  // -- Pods: what each names exists.
  for (const w of workloads) {
    const spec = M.podSpec(w);
    const sa = spec.serviceAccountName;
    if (sa && !inv.find('ServiceAccount', sa, ns)) fail(w, `no ServiceAccount ${sa}`);
    if (!sa) fail(w, 'no serviceAccountName: the pod would run as the namespace\'s default');
    if (spec.automountServiceAccountToken !== false) {
      fail(w, 'automountServiceAccountToken: false expected (no pod here calls the API)');
    }
    const volumes = new Map((spec.volumes || []).map((v) => [v.name, v]));
    for (const t of w.obj.spec.volumeClaimTemplates || []) volumes.set(t.metadata.name, {claim: t});
    const used = new Set();
    for (const v of spec.volumes || []) {
      if (v.secret) {
        const s = inv.find('Secret', v.secret.secretName, ns);
        if (!s) {
          fail(w, `volume ${v.name}: no Secret ${v.secret.secretName} (secrets.example.yaml lists them)`);
          continue;
        }
        const keys = new Set([...Object.keys(s.obj.data || {}), ...Object.keys(s.obj.stringData || {})]);
        for (const item of v.secret.items || []) {
          if (!keys.has(item.key)) fail(w, `volume ${v.name}: Secret ${v.secret.secretName} has no key ${item.key}`);
        }
      }
      if (v.configMap) {
        const cm = inv.find('ConfigMap', v.configMap.name, ns);
        if (!cm) {
          fail(w, `volume ${v.name}: no ConfigMap ${v.configMap.name}`);
          continue;
        }
        for (const item of v.configMap.items || []) {
          if (!(cm.obj.data || {})[item.key]) fail(w, `volume ${v.name}: ConfigMap ${v.configMap.name} has no key ${item.key}`);
        }
      }
    }
    for (const {c} of M.containers(spec)) {
      for (const m of c.volumeMounts || []) {
        if (!volumes.has(m.name)) fail(w, `container ${c.name}: mounts ${m.name}, which is no volume of the pod`);
        used.add(m.name);
      }
      for (const e of c.env || []) {
        const cmRef = e.valueFrom && e.valueFrom.configMapKeyRef;
        if (cmRef) {
          const cm = inv.find('ConfigMap', cmRef.name, ns);
          if (!cm || !(cm.obj.data || {})[cmRef.key]) {
            fail(w, `container ${c.name}: env ${e.name}: no ConfigMap ${cmRef.name} with key ${cmRef.key}`);
          }
        }
        const sRef = e.valueFrom && e.valueFrom.secretKeyRef;
        if (sRef) {
          const s = inv.find('Secret', sRef.name, ns);
          const keys = s ? [...Object.keys(s.obj.data || {}), ...Object.keys(s.obj.stringData || {})] : [];
          if (!keys.includes(sRef.key)) fail(w, `container ${c.name}: env ${e.name}: no Secret ${sRef.name} with key ${sRef.key}`);
        }
      }
      for (const a of [...(c.command || []), ...(c.args || [])]) {
        for (const m of String(a).matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
          if (!M.envOf(c, m[1])) fail(w, `container ${c.name}: ${a} names $(${m[1]}), which its env does not set`);
        }
      }
      // Resources: requests for every container, a memory limit too.
      const r = c.resources || {};
      if (!r.requests || !r.requests.cpu || !r.requests.memory) fail(w, `container ${c.name}: no cpu and memory requests`);
      if (!r.limits || !r.limits.memory) fail(w, `container ${c.name}: no memory limit`);
    }
    for (const v of volumes.keys()) {
      if (!used.has(v)) fail(w, `volume ${v} is mounted by no container`);
    }
  }

  // -- Services: they select pods, and their ports are the pods'.
  const statefulNames = new Set(inv.ofKind('StatefulSet').map((s) => s.obj.spec.serviceName));
  for (const s of inv.ofKind('Service')) {
    const targets = workloads.filter((w) => M.labelsMatch({matchLabels: s.obj.spec.selector}, M.podLabels(w)));
    if (!s.obj.spec.selector || targets.length === 0) {
      fail(s, 'its selector selects no pods of these manifests');
      continue;
    }
    for (const p of s.obj.spec.ports || []) {
      for (const w of targets) {
        const ports = M.podSpec(w).containers.flatMap((c) => c.ports || []);
        const found = typeof p.targetPort === 'string'
          ? ports.some((cp) => cp.name === p.targetPort)
          : ports.some((cp) => cp.containerPort === (p.targetPort || p.port));
        if (!found) fail(s, `port ${p.name || p.port}: targetPort ${p.targetPort || p.port} is no container port of ${M.describe(w)}`);
      }
    }
    if (statefulNames.has(s.obj.metadata.name) && s.obj.spec.clusterIP !== 'None') {
      fail(s, 'a StatefulSet\'s governing Service is headless (clusterIP: None)');
    }
  }
  for (const st of inv.ofKind('StatefulSet')) {
    if (!inv.find('Service', st.obj.spec.serviceName, ns)) fail(st, `no Service ${st.obj.spec.serviceName} (serviceName)`);
  }
  for (const kind of ['PodDisruptionBudget', 'NetworkPolicy']) {
    for (const p of inv.ofKind(kind)) {
      const sel = kind === 'NetworkPolicy' ? p.obj.spec.podSelector : p.obj.spec.selector;
      const targets = workloads.filter((w) => M.labelsMatch(sel, M.podLabels(w)));
      if (targets.length === 0) fail(p, 'its selector selects no pods of these manifests');
      for (const rule of (kind === 'NetworkPolicy' && p.obj.spec.ingress) || []) {
        for (const from of rule.from || []) {
          if (from.podSelector && !workloads.some((w) => M.labelsMatch(from.podSelector, M.podLabels(w)))) {
            fail(p, 'an ingress rule admits pods that none of these manifests run');
          }
        }
        for (const port of rule.ports || []) {
          if (typeof port.port === 'string' && !targets.every((w) =>
            M.podSpec(w).containers.some((c) => (c.ports || []).some((cp) => cp.name === port.port)))) {
            fail(p, `port ${port.port} is not a named port of every pod it selects`);
          }
        }
      }
    }
  }

  // -- Extended resources come from a device plugin of these manifests.
  const offered = new Set();
  for (const w of workloads) {
    for (const {c} of M.containers(M.podSpec(w))) {
      if (M.program(c) !== 'generic-device-plugin' && !String(c.image || '').includes('generic-device-plugin')) continue;
      const flags = M.flagsOf(c.args || [], () => true);
      const domain = (flags.find((f) => f.flag === '--domain') || {}).value || 'squat.ai';
      for (const f of flags.filter((x) => x.flag === '--device')) {
        let dev;
        try {
          dev = ctx.YAML.parse(f.value);
        } catch (e) {
          fail(w, `--device ${f.value}: ${e.message}`);
          continue;
        }
        offered.add(`${domain}/${dev.name}`);
        for (const g of dev.groups || []) {
          for (const p of g.paths || []) {
            if (!/^\/dev\/accel\/accel\d+$/.test(p.path)) fail(w, `--device: ${p.path} is not an accel device node (/dev/accel/accelN)`);
          }
        }
      }
    }
  }
  for (const w of workloads) {
    for (const {c} of M.containers(M.podSpec(w))) {
      const r = c.resources || {};
      for (const name of Object.keys({...(r.limits || {}), ...(r.requests || {})})) {
        if (name.includes('/') && !name.startsWith('hugepages') && !offered.has(name)) {
          fail(w, `container ${c.name}: resource ${name} is offered by no device plugin here (${[...offered].join(', ') || 'none'})`);
        }
      }
    }
  }

  // -- Placement: NFD labels come from the NodeFeatureRule; pods placed on
  // NPU nodes tolerate their taint; nothing else does.
  const nfdLabels = new Map();
  for (const r of inv.ofKind('NodeFeatureRule')) {
    for (const rule of r.obj.spec.rules || []) {
      for (const [k, v] of Object.entries(rule.labels || {})) {
        if (!nfdLabels.has(k)) nfdLabels.set(k, new Set());
        nfdLabels.get(k).add(v);
      }
    }
  }
  for (const w of workloads) {
    const spec = M.podSpec(w);
    const sel = spec.nodeSelector || {};
    const npu = Object.keys(sel).some((k) => k.startsWith('irontune.io/'));
    for (const [k, v] of Object.entries(sel)) {
      if (!k.startsWith('irontune.io/')) continue;
      if (!nfdLabels.has(k) || !nfdLabels.get(k).has(v)) {
        fail(w, `nodeSelector ${k}=${v}: no NodeFeatureRule sets that label`);
      }
    }
    if (npu && !tolerates(spec, NPU_TAINT)) {
      fail(w, `placed on NPU nodes but does not tolerate their taint ${NPU_TAINT.key}:${NPU_TAINT.effect}`);
    }
    if (!npu && tolerates(spec, NPU_TAINT)) {
      fail(w, `tolerates the NPU nodes' taint but is not placed by NPU labels: it would take an NPU node's room`);
    }
    if (!npu && M.containers(spec).some(({c}) => Object.keys((c.resources || {}).limits || {}).some((n) => offered.has(n)))) {
      fail(w, 'asks for the NPU without being placed on NPU nodes');
    }
  }

  // -- irontuned and irontune-client: their flags, files, ports and probes.
  for (const w of workloads) checkDaemonPod(w, inv, ctx, offered);

  // -- The kustomizations take every manifest once.
  checkKustomizations(docs, ctx);

  // -- The passfile the init containers write is one libpq and irontuned
  // take.
  checkPassfileScript(inv, ctx);
}

// What each distinct passfile script writes, by its text.
const passfileRuns = new Map();

// The script an init container runs to write a --fleet-password-file, run
// with /bin/sh on a login whose password holds the characters libpq's
// passfile escapes: one line *:*:*:USER:PASSWORD, escaped, mode 0600.
function checkPassfileScript(inv, ctx) {
  const fs = require('fs');
  const os = require('os');
  const {spawnSync} = require('child_process');
  const scripts = new Map();
  for (const w of inv.workloads()) {
    const spec = M.podSpec(w);
    for (const {c, init} of M.containers(spec)) {
      const cmd = [...(c.command || []), ...(c.args || [])].map(String);
      if (!init || !/(^|\/)sh$/.test(cmd[0] || '') || !/passfile/.test(cmd[1] || '')) continue;
      const m = M.mountOf(spec, c, cmd[1]);
      const cm = m && m.volume && m.volume.configMap && inv.find('ConfigMap', m.volume.configMap.name, NAMESPACE);
      const text = cm && (cm.obj.data || {})[m.rest];
      if (!text) ctx.fail(w, `init container ${c.name}: ${cmd[1]} is in no ConfigMap it mounts`);
      else scripts.set(text, w);
    }
  }
  for (const [text, w] of scripts) {
    if (!passfileRuns.has(text)) {
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'irontune-passfile-'));
      try {
        fs.mkdirSync(path.join(tmp, 'login'));
        fs.writeFileSync(path.join(tmp, 'login/username'), 'irontune');
        fs.writeFileSync(path.join(tmp, 'login/password'), 'pa:ss\\wo rd');
        fs.writeFileSync(path.join(tmp, 'script.sh'), text);
        const out = path.join(tmp, 'pgpass');
        const run = spawnSync('/bin/sh', [path.join(tmp, 'script.sh'), out], {encoding: 'utf8',
          env: {PATH: process.env.PATH, STORE_LOGIN: path.join(tmp, 'login')}});
        const made = fs.existsSync(out);
        passfileRuns.set(text, {status: run.status, stderr: run.stderr,
          mode: made ? fs.statSync(out).mode & 0o777 : null,
          content: made ? fs.readFileSync(out, 'utf8') : null});
      } finally {
        fs.rmSync(tmp, {recursive: true, force: true});
      }
    }
    const r = passfileRuns.get(text);
    const want = '*:*:*:irontune:pa\\:ss\\\\wo rd\n';
    if (r.status !== 0) ctx.fail(w, `the passfile script exited ${r.status}: ${(r.stderr || '').trim()}`);
    else if (r.mode !== 0o600) ctx.fail(w, `the passfile script made mode ${r.mode === null ? 'no file' : r.mode.toString(8)}; irontuned and libpq take 0600 only`);
    else if (r.content !== want) ctx.fail(w, `the passfile script wrote ${JSON.stringify(r.content)}, not ${JSON.stringify(want)}`);
  }
  if (scripts.size === 0) ctx.fail(null, 'no init container writes a passfile');
}

// One pod's irontuned (if any) against the binaries and the rest.
function checkDaemonPod(w, inv, ctx, offered) {
  const {fail} = ctx;
  const spec = M.podSpec(w);
  const ns = NAMESPACE;
  const all = M.containers(spec);
  for (const {c, init} of all) {
    if (M.program(c) !== 'irontuned') {
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
        if (c[probe] && c[probe].exec) checkClient(w, c, c[probe].exec.command, null, ctx, `${probe}`);
      }
      continue;
    }
    if (init) {
      fail(w, `container ${c.name}: irontuned as an init container never ends`);
      continue;
    }
    const argv = [...(c.command || []).slice(1), ...(c.args || [])];
    const daemon = ctx.daemon;
    const known = (f) => (daemon && daemon.top.flags.get(f)) || PENDING_DAEMON_FLAGS.get(f);
    const flags = M.flagsOf(argv, (f) => known(f) && known(f).takesValue);
    const get = (name) => flags.filter((f) => f.flag === name).map((f) => f.value);
    for (const f of flags) {
      if (f.positional !== undefined) {
        fail(w, `container ${c.name}: irontuned takes no argument ${f.positional}`);
        continue;
      }
      const info = daemon ? daemon.top.flags.get(f.flag) : null;
      if (daemon && !info) {
        if (PENDING_DAEMON_FLAGS.has(f.flag)) {
          ctx.note(`${f.flag}: not in this irontuned's --help yet (the front); taken as given`);
        } else {
          fail(w, `container ${c.name}: irontuned has no flag ${f.flag} (irontuned --help)`);
          continue;
        }
      }
      const effective = info || PENDING_DAEMON_FLAGS.get(f.flag);
      if (effective && effective.takesValue && f.value === null) fail(w, `container ${c.name}: ${f.flag} needs a value`);
      if (effective && effective.choices && f.value !== null && !effective.choices.includes(f.value)) {
        fail(w, `container ${c.name}: ${f.flag}=${f.value}: not one of ${effective.choices.join(', ')}`);
      }
    }
    const front = get('--role').includes('front');
    const device = get('--device')[0] || (front ? null : 'sim:npu2');

    // Files it reads are in the container.
    for (const flag of DAEMON_FILE_FLAGS) {
      for (const file of get(flag)) checkFile(w, c, file, `${flag}`, inv, ctx);
    }
    // What it listens on: TCP ports are container ports, served with TLS
    // off loopback, and tokens for a front; unix sockets in a volume.
    const listens = get('--listen');
    const tcp = [];
    const unix = [];
    for (const l of listens) {
      if (l.startsWith('unix:')) {
        unix.push(l.slice(5));
        if (!M.mountOf(spec, c, l.slice(5))) fail(w, `container ${c.name}: --listen ${l}: not in a volume`);
        continue;
      }
      const m = l.match(/^(.*):(\d+)$/);
      if (!m) {
        fail(w, `container ${c.name}: --listen ${l}: neither unix:PATH nor HOST:PORT`);
        continue;
      }
      tcp.push({host: m[1], port: Number(m[2])});
      if (!(c.ports || []).some((p) => p.containerPort === Number(m[2]))) {
        fail(w, `container ${c.name}: --listen ${l}: port ${m[2]} is not a containerPort`);
      }
      const loopback = /^(127\.|localhost$|\[::1\]$)/.test(m[1]);
      if (!loopback && get('--tls-cert').length === 0 && !flags.some((f) => f.flag === '--insecure')) {
        fail(w, `container ${c.name}: --listen ${l} off loopback without --tls-cert: irontuned refuses to start`);
      }
    }
    if (listens.length === 0) fail(w, `container ${c.name}: no --listen (the default socket's /run/irontune may not be there)`);
    if (front && get('--tokens').length === 0) fail(w, `container ${c.name}: a front without --tokens serves nobody off the pod`);
    if (front && tcp.length === 0) fail(w, `container ${c.name}: a front that listens on no TCP port`);
    for (const p of c.ports || []) {
      if (!tcp.some((t) => t.port === p.containerPort)) fail(w, `container ${c.name}: containerPort ${p.containerPort} is no --listen port`);
    }

    // The fleet.
    const urls = get('--fleet');
    if (urls.length === 0) fail(w, `container ${c.name}: irontuned without --fleet is no part of the fleet`);
    for (const raw of urls) checkFleetUrl(w, c, raw, get('--fleet-password-file'), inv, ctx);
    for (const gp of get('--fleet-platform')) {
      const m = gp.match(/^(npu1|npu2)=([a-z0-9-]+)$/);
      if (!m) fail(w, `container ${c.name}: --fleet-platform ${gp}: not GEN=PLATFORM (npu1 or npu2)`);
      else if (!ctx.platforms().has(m[2])) fail(w, `container ${c.name}: --fleet-platform ${gp}: no box DaemonSet serves platform ${m[2]}`);
    }

    // A real NPU: hostPID, the device, the power mode set before it opens.
    if (device && device.startsWith('xrt:')) {
      if (spec.hostPID !== true) {
        fail(w, 'irontuned on a real NPU needs hostPID: the driver reports the pids of the node\'s PID namespace');
      }
      const npuRes = Object.keys((c.resources || {}).limits || {}).filter((n) => offered.has(n));
      if (npuRes.length === 0) fail(w, `container ${c.name}: --device ${device} without the NPU from the device plugin`);
      if (get('--power-mode').length) {
        fail(w, `container ${c.name}: --power-mode needs CAP_SYS_ADMIN, which irontuned's container has not; the power-mode init container sets it`);
      }
      const pm = all.filter(({c: x, init}) => init && x !== c &&
        (x.command || []).some((a) => path.basename(String(a)) === 'xrt-smi'));
      if (pm.length !== 1) {
        fail(w, 'no init container running xrt-smi configure --pmode before irontuned opens the NPU');
      } else {
        const x = pm[0].c;
        const words = [...(x.command || []), ...(x.args || [])].map(String);
        const i = words.indexOf('--pmode');
        if (words[1] !== 'configure' || i < 0 || !POWER_MODES.includes(words[i + 1])) {
          fail(w, `init container ${x.name}: not xrt-smi configure --pmode MODE (${POWER_MODES.join(', ')}): ${words.join(' ')}`);
        }
        const caps = ((x.securityContext || {}).capabilities || {}).add || [];
        if (!caps.includes('SYS_ADMIN')) fail(w, `init container ${x.name}: setting the power mode takes CAP_SYS_ADMIN (the driver's SET_STATE is DRM_ROOT_ONLY)`);
        const xres = Object.keys((x.resources || {}).limits || {});
        if (!npuRes.every((n) => xres.includes(n))) fail(w, `init container ${x.name}: does not get the NPU (${npuRes.join(', ')})`);
      }
    }

    // Unprivileged.
    const sc = {...(spec.securityContext || {}), ...(c.securityContext || {})};
    if (sc.runAsNonRoot !== true || !sc.runAsUser) fail(w, `container ${c.name}: irontuned runs as a user of its own (runAsNonRoot, runAsUser)`);
    if (sc.allowPrivilegeEscalation !== false || sc.privileged) fail(w, `container ${c.name}: allowPrivilegeEscalation: false, not privileged`);
    if (!((sc.capabilities || {}).drop || []).includes('ALL') || ((sc.capabilities || {}).add || []).length) {
      fail(w, `container ${c.name}: irontuned needs no capability (drop ALL, add none)`);
    }

    // Probes: gRPC health through irontune-client, at what it serves.
    if (!c.livenessProbe) fail(w, `container ${c.name}: no livenessProbe (health follows the device worker)`);
    for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
      const p = c[probe];
      if (!p) continue;
      if (p.grpc) {
        fail(w, `container ${c.name}: ${probe}: the kubelet's grpc probe speaks plaintext, which irontuned refuses off loopback; use irontune-client health`);
        continue;
      }
      const cmd = p.exec && p.exec.command;
      if (!cmd || path.basename(String(cmd[0])) !== 'irontune-client') {
        fail(w, `container ${c.name}: ${probe}: not an exec of irontune-client health`);
        continue;
      }
      const sub = checkClient(w, c, cmd, {tcp, unix, tls: get('--tls-cert').length > 0}, ctx, probe);
      if (sub !== 'health') fail(w, `container ${c.name}: ${probe}: irontune-client ${sub}, not health`);
    }
  }
}

// An irontune-client command line run in container `c`; `serves` says
// what the irontuned beside it listens on. Returns its command.
function checkClient(w, c, cmd, serves, ctx, what) {
  const {fail} = ctx;
  const inv = ctx.inv;
  if (path.basename(String(cmd[0])) !== 'irontune-client') return null;
  const client = ctx.client;
  const argv = cmd.slice(1).map(String);
  let sub = null;
  const known = (f) => {
    const top = client && client.top.flags.get(f);
    const s = client && sub && client.top.subcommands.has(sub) && client.sub(sub).flags.get(f);
    return top || s;
  };
  const flags = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('-')) {
      if (sub) {
        fail(w, `container ${c.name}: ${what}: irontune-client ${sub} takes no argument ${a}`);
      } else {
        sub = a;
        if (client && !client.top.subcommands.has(a)) fail(w, `container ${c.name}: ${what}: irontune-client has no command ${a}`);
      }
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    const info = known(name);
    if (client && !info) {
      fail(w, `container ${c.name}: ${what}: irontune-client${sub ? ' ' + sub : ''} has no flag ${name} (irontune-client --help)`);
      continue;
    }
    let value = eq > 0 ? a.slice(eq + 1) : null;
    if (value === null && info && info.takesValue) value = argv[++i];
    flags.push({flag: name, value});
  }
  const get = (n) => flags.filter((f) => f.flag === n).map((f) => f.value);
  for (const flag of CLIENT_FILE_FLAGS) {
    for (const file of get(flag)) checkFile(w, c, file, `${what}: ${flag}`, inv, ctx);
  }
  if (!serves) return sub;
  const server = get('--server')[0];
  if (!server) {
    fail(w, `container ${c.name}: ${what}: no --server`);
    return sub;
  }
  if (server.startsWith('unix:')) {
    if (!serves.unix.includes(server.slice(5))) fail(w, `container ${c.name}: ${what}: --server ${server} is not where irontuned listens`);
    return sub;
  }
  const m = server.match(/^(.*):(\d+)$/);
  if (!m || !serves.tcp.some((t) => t.port === Number(m[2]))) {
    fail(w, `container ${c.name}: ${what}: --server ${server} is no port irontuned listens on`);
  }
  if (serves.tls) {
    if (get('--tls-ca').length === 0) fail(w, `container ${c.name}: ${what}: irontuned serves TLS: --tls-ca needed`);
    const name = get('--tls-server-name')[0];
    const services = inv.ofKind('Service').filter((s) =>
      M.labelsMatch({matchLabels: s.obj.spec.selector}, M.podLabels(w)));
    const names = services.flatMap((s) => [`${s.obj.metadata.name}.${s.obj.metadata.namespace}.svc.cluster.local`,
                                           `${s.obj.metadata.name}.${s.obj.metadata.namespace}.svc`]);
    if (!name || !names.includes(name)) {
      fail(w, `container ${c.name}: ${what}: --tls-server-name ${name}: the certificate names the Service clients dial (${names.join(', ') || 'none selects this pod'})`);
    }
    for (const s of services) {
      if (s.obj.spec.clusterIP !== 'None') fail(s, 'the fronts\' Service is headless (clusterIP: None), so DNS gives the client every front for round_robin');
    }
  }
  return sub;
}

// `file`, which container `c` of workload `w` reads, is there: in a Secret
// or ConfigMap volume with that key, or written by an init container.
function checkFile(w, c, file, what, inv, ctx) {
  const spec = M.podSpec(w);
  const m = M.mountOf(spec, c, file);
  if (!m || !m.volume) {
    ctx.fail(w, `container ${c.name}: ${what} ${file}: in no volume it mounts`);
    return;
  }
  const keys = volumeKeys(inv, NAMESPACE, m.volume);
  if (keys) {
    if (!keys.has(m.rest)) ctx.fail(w, `container ${c.name}: ${what} ${file}: the volume ${m.volume.name} has no ${m.rest}`);
    return;
  }
  if (m.volume.emptyDir) {
    const writer = M.containers(spec).some(({c: x, init}) => init &&
      [...(x.command || []), ...(x.args || [])].some((a) => String(a) === file) &&
      (x.volumeMounts || []).some((vm) => vm.name === m.volume.name && !vm.readOnly));
    if (!writer) ctx.fail(w, `container ${c.name}: ${what} ${file}: an emptyDir no init container writes it into`);
  }
}

// The fleet's URL: libpq's, no password, a store these manifests run, TLS
// checked with a CA the container has, and a passfile for its user.
function checkFleetUrl(w, c, raw, passfiles, inv, ctx) {
  const {fail} = ctx;
  const url = expand(inv, NAMESPACE, c, raw);
  if (url === null) {
    fail(w, `container ${c.name}: --fleet ${raw}: cannot be resolved from the container's env`);
    return;
  }
  let u;
  try {
    u = new URL(url);
  } catch (e) {
    fail(w, `container ${c.name}: --fleet ${url}: not a URL`);
    return;
  }
  if (!['postgresql:', 'postgres:'].includes(u.protocol)) fail(w, `container ${c.name}: --fleet ${url}: not a postgresql:// URL`);
  if (u.password) fail(w, `container ${c.name}: --fleet: a password in the URL is refused (every local user can read a command line); use the passfile`);
  if (passfiles.length !== 1) fail(w, `container ${c.name}: --fleet without one --fleet-password-file`);
  const sslmode = u.searchParams.get('sslmode');
  if (sslmode && !['require', 'verify-ca', 'verify-full'].includes(sslmode)) {
    fail(w, `container ${c.name}: --fleet: sslmode=${sslmode} is refused for a store on another host`);
  }
  const ca = u.searchParams.get('sslrootcert');
  if (!ca) fail(w, `container ${c.name}: --fleet: no sslrootcert: verify-full checks the store against the system's CAs`);
  else checkFile(w, c, ca, '--fleet sslrootcert', inv, ctx);
  // The host: a Service of these manifests, or a CloudNativePG Cluster's
  // read-write Service, in this namespace.
  const host = u.hostname;
  const port = Number(u.port || 5432);
  const m = host.match(/^([a-z0-9-]+)\.([a-z0-9-]+)\.svc(\.cluster\.local)?$/);
  const stores = [];
  if (m) {
    const svc = inv.find('Service', m[1], m[2]);
    if (svc && (svc.obj.spec.ports || []).some((p) => p.port === port)) stores.push(M.describe(svc));
    for (const cl of inv.ofKind('Cluster')) {
      if (`${cl.obj.metadata.name}-rw` === m[1] && cl.obj.metadata.namespace === m[2] && port === 5432) {
        stores.push(M.describe(cl));
      }
    }
  }
  if (stores.length === 0) fail(w, `container ${c.name}: --fleet: ${host}:${port} is no store of these manifests`);
  ctx.stores = stores;
  // The passfile's user is the URL's.
  const user = decodeURIComponent(u.username || '');
  for (const file of passfiles) {
    const mnt = M.mountOf(M.podSpec(w), c, file);
    if (!mnt || !mnt.volume || !mnt.volume.emptyDir) continue;
    for (const {c: x, init} of M.containers(M.podSpec(w))) {
      if (!init || ![...(x.command || []), ...(x.args || [])].includes(file)) continue;
      for (const vm of x.volumeMounts || []) {
        const v = (M.podSpec(w).volumes || []).find((vol) => vol.name === vm.name);
        const s = v && v.secret && inv.find('Secret', v.secret.secretName, NAMESPACE);
        const name = s && ((s.obj.stringData || {}).username ||
          ((s.obj.data || {}).username && Buffer.from(s.obj.data.username, 'base64').toString()));
        if (name && name !== user) fail(w, `container ${c.name}: --fleet user ${user}, but the passfile is written for ${name} (${M.describe(s)})`);
      }
    }
  }
}

// Every YAML file but the kustomizations and the examples is taken by
// exactly one kustomization; every path a kustomization names exists.
function checkKustomizations(docs, ctx) {
  const fs = require('fs');
  const byFile = new Map();
  const kust = docs.filter((d) => d.obj.kind === 'Kustomization');
  for (const k of kust) {
    const dir = path.dirname(k.file);
    for (const r of k.obj.resources || []) {
      const target = path.normalize(path.join(dir, r));
      const abs = path.join(ctx.root, target);
      if (!fs.existsSync(abs)) {
        ctx.fail(k, `resources: ${r} does not exist`);
      } else if (fs.statSync(abs).isDirectory()) {
        if (!fs.existsSync(path.join(abs, 'kustomization.yaml'))) ctx.fail(k, `resources: ${r} has no kustomization.yaml`);
      } else {
        if (target.startsWith('..')) ctx.fail(k, `resources: ${r} is outside the kustomization's directory, which kustomize refuses`);
        byFile.set(target, (byFile.get(target) || []).concat([k.file]));
      }
    }
  }
  if (!kust.some((k) => k.file === 'kustomization.yaml')) ctx.fail(null, 'no kustomization.yaml at the top');
  for (const file of ctx.files) {
    if (path.basename(file) === 'kustomization.yaml' || /\.example\.ya?ml$/.test(file)) continue;
    const takers = byFile.get(file) || [];
    if (takers.length !== 1) {
      ctx.fail(null, `${file}: taken by ${takers.length} kustomizations (${takers.join(', ') || 'none'}); one expected`);
    }
  }
  for (const d of docs) {
    if (/\.example\.ya?ml$/.test(d.file) && d.obj.kind !== 'Secret') {
      ctx.fail(d, 'the example file holds Secrets only');
    }
    if (d.obj.kind === 'Secret' && !/\.example\.ya?ml$/.test(d.file)) {
      ctx.fail(d, 'a Secret outside secrets.example.yaml would be applied with its placeholder');
    }
  }
}

module.exports = {runChecks, POWER_MODES};
