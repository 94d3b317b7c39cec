'use strict';
// The checks can fail: each mutation below breaks a copy of the manifests
// in one way, and validate.js must fail it for the reason meant (the
// failure's text holds `expect`). The manifests as they are must pass.
// Document mutations change the parsed documents; file mutations change a
// copy of the directory.

const fs = require('fs');
const os = require('os');
const path = require('path');

function find(docs, kind, name) {
  const d = docs.find((x) => x.obj.kind === kind && x.obj.metadata && x.obj.metadata.name === name);
  if (!d) throw new Error(`the mutation's target ${kind}/${name} is gone`);
  return d.obj;
}
const pod = (docs, kind, name) => find(docs, kind, name).spec.template.spec;
const container = (spec, name) => {
  const c = [...(spec.initContainers || []), ...spec.containers].find((x) => x.name === name);
  if (!c) throw new Error(`the mutation's target container ${name} is gone`);
  return c;
};
const daemon = (docs, kind, name) => container(pod(docs, kind, name), 'irontuned');
const replaceArg = (c, from, to) => {
  const i = c.args.findIndex((a) => a.startsWith(from));
  if (i < 0) throw new Error(`no argument ${from}`);
  c.args[i] = to;
};
const rule = (docs, name) => {
  const r = find(docs, 'NodeFeatureRule', 'irontune-npu').spec.rules.find((x) => x.name === name);
  if (!r) throw new Error(`no rule ${name}`);
  return r;
};
const editFile = (root, file, edit) => {
  const p = path.join(root, file);
  fs.writeFileSync(p, edit(fs.readFileSync(p, 'utf8')));
};

const MUTATIONS = [
  // Schemas.
  {name: 'a misspelt field', expect: 'nodeSelectr: unknown field',
    doc: (d) => { pod(d, 'DaemonSet', 'box-strix').nodeSelectr = {a: 'b'}; }},
  {name: 'a misspelt field deep in a container', expect: 'limitz: unknown field',
    doc: (d) => { daemon(d, 'Deployment', 'front').resources.limitz = {}; }},
  {name: 'a port number given as text', expect: 'containerPort must be integer',
    doc: (d) => { daemon(d, 'Deployment', 'front').ports[0].containerPort = 'grpc'; }},
  {name: 'an unknown kind', expect: 'unknown kind DaemonSett',
    doc: (d) => { find(d, 'DaemonSet', 'npu-facts').kind = 'DaemonSett'; }},
  {name: 'an API version that is gone', expect: 'unknown kind Deployment of extensions/v1beta1: not an API version',
    doc: (d) => { find(d, 'Deployment', 'front').apiVersion = 'extensions/v1beta1'; }},
  {name: 'an NFD op that does not exist', expect: 'must be equal to one of the allowed values',
    doc: (d) => { rule(d, 'irontune npu1').matchFeatures[0].matchExpressions.vendor.op = 'Equals'; }},
  {name: 'a misspelt NFD field', expect: 'additional properties (lables)',
    doc: (d) => { rule(d, 'irontune strix').lables = {}; }},
  {name: 'a misspelt field of the CloudNativePG Cluster', expect: 'ownr: unknown field',
    doc: (d) => { find(d, 'Cluster', 'store').spec.bootstrap.initdb.ownr = 'irontune'; }},
  {name: 'a container name the API server refuses', expect: 'container name Irontuned',
    doc: (d) => { daemon(d, 'DaemonSet', 'box-krackan').name = 'Irontuned'; }},
  {name: 'a TLS Secret without its key', expect: 'needs the key tls.key',
    doc: (d) => { delete find(d, 'Secret', 'grpc-tls').stringData['tls.key']; }},
  // References between the manifests.
  {name: 'a namespaced object without its namespace', expect: 'metadata.namespace must be irontune',
    doc: (d) => { delete find(d, 'Deployment', 'front').metadata.namespace; }},
  {name: 'a Service that selects no pods', expect: 'selects no pods',
    doc: (d) => { find(d, 'Service', 'fronts').spec.selector['app.kubernetes.io/component'] = 'frnt'; }},
  {name: 'a Service port no container has', expect: 'targetPort grpcs',
    doc: (d) => { find(d, 'Service', 'fronts').spec.ports[0].targetPort = 'grpcs'; }},
  {name: 'the fronts\' Service with a cluster IP', expect: 'headless',
    doc: (d) => { delete find(d, 'Service', 'fronts').spec.clusterIP; }},
  {name: 'a Secret no manifest has', expect: 'no Secret grpc-tlz',
    doc: (d) => { pod(d, 'Deployment', 'front').volumes.find((v) => v.name === 'tls').secret.secretName = 'grpc-tlz'; }},
  {name: 'a Secret key that is not there', expect: 'has no key ca.pem',
    doc: (d) => { pod(d, 'DaemonSet', 'box-phoenix').volumes.find((v) => v.name === 'store-ca').secret.items[0].key = 'ca.pem'; }},
  {name: 'a ConfigMap key that is not there', expect: 'no ConfigMap fleet-store with key uri',
    doc: (d) => { daemon(d, 'DaemonSet', 'box-krackan').env[0].valueFrom.configMapKeyRef.key = 'uri'; }},
  {name: 'a ServiceAccount that is not there', expect: 'no ServiceAccount boxes',
    doc: (d) => { pod(d, 'DaemonSet', 'box-strix-halo').serviceAccountName = 'boxes'; }},
  {name: 'a variable the args name and the env does not set', expect: 'names $(NODE_NAME), which its env does not set',
    doc: (d) => { const c = daemon(d, 'DaemonSet', 'box-strix'); c.env = c.env.filter((e) => e.name !== 'NODE_NAME'); }},
  {name: 'two DaemonSets selecting each other\'s pods', expect: 'also selects the pods',
    doc: (d) => { delete find(d, 'DaemonSet', 'box-strix').spec.selector.matchLabels['irontune.io/npu-platform']; }},
  {name: 'a volume no container mounts', expect: 'volume spare is mounted by no container',
    doc: (d) => { pod(d, 'Deployment', 'front').volumes.push({name: 'spare', emptyDir: {}}); }},
  {name: 'a resource no device plugin offers', expect: 'irontune.io/npus is offered by no device plugin',
    doc: (d) => { const r = daemon(d, 'DaemonSet', 'box-strix').resources.limits; r['irontune.io/npus'] = '1'; delete r['irontune.io/npu']; }},
  {name: 'a label no NodeFeatureRule sets', expect: 'irontune.io/npu-platform=strixx: no NodeFeatureRule sets',
    doc: (d) => { pod(d, 'DaemonSet', 'box-strix').nodeSelector['irontune.io/npu-platform'] = 'strixx'; }},
  {name: 'a box that does not tolerate the NPU nodes\' taint', expect: 'does not tolerate their taint',
    doc: (d) => { pod(d, 'DaemonSet', 'box-krackan').tolerations = []; }},
  {name: 'a front that may take an NPU node', expect: 'tolerates the NPU nodes\' taint',
    doc: (d) => { pod(d, 'Deployment', 'front').tolerations = [{key: 'irontune.io/npu', operator: 'Exists', effect: 'NoSchedule'}]; }},
  // irontuned and irontune-client.
  {name: 'an irontuned flag that does not exist', needs: 'daemon', expect: 'irontuned has no flag --fleet-pasword-file',
    doc: (d) => { replaceArg(daemon(d, 'DaemonSet', 'box-phoenix'), '--fleet-password-file', '--fleet-pasword-file=/run/secrets/irontune/pgpass'); }},
  {name: 'a value irontuned refuses', needs: 'daemon', expect: '--log-level=loud: not one of',
    doc: (d) => { daemon(d, 'DaemonSet', 'box-strix').args.push('--log-level=loud'); }},
  {name: 'an irontune-client flag that does not exist', needs: 'client', expect: 'irontune-client has no flag --tls-cafile',
    doc: (d) => { const p = daemon(d, 'Deployment', 'front').readinessProbe.exec; p.command = p.command.map((a) => a.replace('--tls-ca=', '--tls-cafile=')); }},
  {name: 'an irontune-client command that does not exist', needs: 'client', expect: 'irontune-client has no command healthz',
    doc: (d) => { const p = daemon(d, 'DaemonSet', 'box-strix').livenessProbe.exec; p.command = p.command.map((a) => (a === 'health' ? 'healthz' : a)); }},
  {name: 'a listen port that is no container port', expect: 'port 50052 is not a containerPort',
    doc: (d) => { replaceArg(daemon(d, 'Deployment', 'front'), '--listen', '--listen=0.0.0.0:50052'); }},
  {name: 'a plaintext listener off loopback', expect: 'off loopback without --tls-cert',
    doc: (d) => { const c = daemon(d, 'Deployment', 'front'); c.args = c.args.filter((a) => !a.startsWith('--tls-')); }},
  {name: 'a probe asking another port', expect: 'is no port irontuned listens on',
    doc: (d) => { const p = daemon(d, 'Deployment', 'front').startupProbe.exec; p.command = p.command.map((a) => a.replace(':50051', ':50061')); }},
  {name: 'a probe asking another socket', expect: 'is not where irontuned listens',
    doc: (d) => { const p = daemon(d, 'DaemonSet', 'box-strix').livenessProbe.exec; p.command = p.command.map((a) => a.replace('irontuned.sock', 'other.sock')); }},
  {name: 'a probe checking a name the certificate does not carry', expect: '--tls-server-name fronts.irontune:',
    doc: (d) => { const p = daemon(d, 'Deployment', 'front').livenessProbe.exec; p.command = p.command.map((a) => a.replace(/--tls-server-name=.*/, '--tls-server-name=fronts.irontune')); }},
  {name: 'the kubelet\'s grpc probe', expect: 'the kubelet\'s grpc probe speaks plaintext',
    doc: (d) => { daemon(d, 'Deployment', 'front').livenessProbe = {grpc: {port: 50051}}; }},
  {name: 'the TLS key outside every volume', expect: '--tls-key /etc/irontune/tlz/tls.key: in no volume',
    doc: (d) => { replaceArg(daemon(d, 'Deployment', 'front'), '--tls-key', '--tls-key=/etc/irontune/tlz/tls.key'); }},
  {name: 'a tokens file the Secret does not hold', expect: 'the volume tokens has no tokens.txt',
    doc: (d) => { replaceArg(daemon(d, 'Deployment', 'front'), '--tokens', '--tokens=/etc/irontune/tokens/tokens.txt'); }},
  {name: 'a passfile no init container writes', expect: 'an emptyDir no init container writes it into',
    doc: (d) => { container(pod(d, 'Deployment', 'front'), 'passfile').command[2] = '/run/secrets/irontune/passfile'; }},
  {name: 'a passfile script that does not escape the password', expect: 'the passfile script wrote',
    doc: (d) => { const cm = find(d, 'ConfigMap', 'fleet-store'); cm.data['make-passfile.sh'] = cm.data['make-passfile.sh'].replace('password=$(escape < "$login/password")', 'password=$(cat "$login/password")'); }},
  {name: 'a passfile others may read', expect: 'irontuned and libpq take 0600 only',
    doc: (d) => { const cm = find(d, 'ConfigMap', 'fleet-store'); cm.data['make-passfile.sh'] = cm.data['make-passfile.sh'].replace('umask 077', 'umask 022'); }},
  {name: 'a front without tokens', expect: 'a front without --tokens',
    doc: (d) => { const c = daemon(d, 'Deployment', 'front'); c.args = c.args.filter((a) => !a.startsWith('--tokens')); }},
  {name: 'a store host no manifest runs', expect: 'store.irontune.svc:5432 is no store',
    doc: (d) => { const cm = find(d, 'ConfigMap', 'fleet-store'); cm.data.url = cm.data.url.replace('store-rw.', 'store.'); }},
  {name: 'a password in the fleet\'s URL', expect: 'a password in the URL is refused',
    doc: (d) => { const cm = find(d, 'ConfigMap', 'fleet-store'); cm.data.url = cm.data.url.replace('irontune@', 'irontune:secret@'); }},
  {name: 'TLS to the store switched off', expect: 'sslmode=disable is refused',
    doc: (d) => { const cm = find(d, 'ConfigMap', 'fleet-store'); cm.data.url += '&sslmode=disable'; }},
  {name: 'the fleet\'s user not the passfile\'s', expect: 'the passfile is written for irontune',
    doc: (d) => { const cm = find(d, 'ConfigMap', 'fleet-store'); cm.data.url = cm.data.url.replace('irontune@', 'tuner@'); }},
  {name: 'a box in a PID namespace of its own', expect: 'needs hostPID',
    doc: (d) => { pod(d, 'DaemonSet', 'box-gorgon-point').hostPID = false; }},
  {name: 'a power mode xrt-smi does not know', expect: 'not xrt-smi configure --pmode MODE',
    doc: (d) => { const c = container(pod(d, 'DaemonSet', 'box-strix'), 'power-mode'); c.command[3] = 'fast'; }},
  {name: 'the power mode set without CAP_SYS_ADMIN', expect: 'takes CAP_SYS_ADMIN',
    doc: (d) => { container(pod(d, 'DaemonSet', 'box-strix'), 'power-mode').securityContext.capabilities.add = []; }},
  {name: 'irontuned setting the power mode itself', expect: '--power-mode needs CAP_SYS_ADMIN',
    doc: (d) => { daemon(d, 'DaemonSet', 'box-phoenix').args.push('--power-mode=performance'); }},
  {name: 'irontuned as root', expect: 'runs as a user of its own',
    doc: (d) => { const c = daemon(d, 'DaemonSet', 'box-strix'); c.securityContext = {...c.securityContext, runAsNonRoot: false}; }},
  // Placement by Node Feature Discovery.
  {name: 'the rule no longer naming Strix', expect: 'node "Strix": labelled npu2/no platform, expected npu2/strix',
    doc: (d) => { rule(d, 'irontune strix').matchFeatures[2].matchExpressions['amdxdna.vbnv'].value = ['npu-strixx']; }},
  {name: 'the npu2 rule on the wrong PCI device', expect: 'node "Strix Halo": labelled no NPU',
    doc: (d) => { rule(d, 'irontune npu2').matchFeatures[0].matchExpressions.device.value = ['17f1']; }},
  {name: 'the npu1 rule without the driver check', expect: 'labelled npu1/phoenix, expected no NPU',
    doc: (d) => { const r = rule(d, 'irontune npu1'); r.matchFeatures = r.matchFeatures.slice(0, 1); r.matchFeatures[0].matchExpressions.device.value.push('17f0'); }},
  {name: 'the facts script writing the name unslugged', expect: 'node "Krackan": labelled npu2/no platform, expected npu2/krackan',
    doc: (d) => { const cm = find(d, 'ConfigMap', 'npu-facts'); cm.data['npu-facts.sh'] = cm.data['npu-facts.sh'].replace('slug < "$dev/vbnv"', 'cat "$dev/vbnv"'); }},
  {name: 'the facts script writing labels', expect: 'npu-facts wrote labels',
    doc: (d) => { const cm = find(d, 'ConfigMap', 'npu-facts'); cm.data['npu-facts.sh'] = cm.data['npu-facts.sh'].split('# +no-label\\n').join(''); }},
  {name: 'the facts written where NFD does not read', expect: 'where NFD\'s local source reads',
    doc: (d) => { pod(d, 'DaemonSet', 'npu-facts').volumes.find((v) => v.name === 'features').hostPath.path = '/etc/nfd'; }},
  {name: 'a platform with no box', expect: 'node "Gorgon Point 2 (named by its firmware)": gets no box',
    doc: (d) => { const i = d.findIndex((x) => x.obj.kind === 'DaemonSet' && x.obj.metadata.name === 'box-gorgon-point'); d.splice(i, 1); }},
  // Files.
  {name: 'a YAML syntax error', expect: 'YAML:',
    files: (root) => editFile(root, 'fleet/fronts.yaml', (t) => t + '\n  broken: [unclosed\n')},
  {name: 'a duplicate key', expect: 'YAML:',
    files: (root) => editFile(root, 'store/store.yaml', (t) => t.replace('  replicas: 1\n', '  replicas: 1\n  replicas: 2\n'))},
  {name: 'a manifest no kustomization takes', expect: 'fleet/extra.yaml: taken by 0 kustomizations',
    files: (root) => fs.writeFileSync(path.join(root, 'fleet/extra.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: irontune}\ndata: {a: b}\n')},
  {name: 'a kustomization naming a file that is not there', expect: 'resources: gone.yaml does not exist',
    files: (root) => editFile(root, 'store/kustomization.yaml', (t) => t + '  - gone.yaml\n')},
  {name: 'a placeholder Secret among the applied manifests', expect: 'a Secret outside secrets.example.yaml',
    files: (root) => editFile(root, 'fleet/fronts.yaml', (t) => t +
        '---\napiVersion: v1\nkind: Secret\nmetadata: {name: tokens2, namespace: irontune}\nstringData: {tokens: REPLACE}\n')},
];

function selfTest(dir, env, validate) {
  const started = Date.now();
  const base = validate(dir, env);
  if (base.failures.length) {
    for (const f of base.failures) console.log(`FAIL (unchanged manifests) ${f.where}: ${f.message}`);
    console.log('the manifests as they are must pass before their broken copies can be judged');
    return false;
  }
  let caught = 0;
  let missed = 0;
  let notRun = 0;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'irontune-manifests-'));
  try {
    MUTATIONS.forEach((m, i) => {
      if ((m.needs === 'daemon' && !env.daemon) || (m.needs === 'client' && !env.client)) {
        console.log(`not run: ${m.name} (needs --${m.needs === 'daemon' ? 'irontuned' : 'client'})`);
        notRun++;
        return;
      }
      let result;
      try {
        if (m.files) {
          const copy = path.join(tmp, String(i));
          fs.cpSync(dir, copy, {recursive: true});
          m.files(copy);
          result = validate(copy, env);
        } else {
          result = validate(dir, env, m.doc);
        }
      } catch (e) {
        console.log(`MISSED: ${m.name}: the mutation itself failed: ${e.message}`);
        missed++;
        return;
      }
      const texts = result.failures.map((f) => `${f.where}: ${f.message}`);
      const hit = texts.find((t) => t.includes(m.expect));
      if (hit) {
        caught++;
        console.log(`caught: ${m.name}\n    ${hit}`);
      } else {
        missed++;
        console.log(`MISSED: ${m.name}: no failure says "${m.expect}"` +
            (texts.length ? `; it gave:\n    ${texts.join('\n    ')}` : '; it passed'));
      }
    });
  } finally {
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  console.log(`${caught} broken copies caught, ${missed} missed, ${notRun} not run (${Date.now() - started} ms)`);
  return missed === 0;
}

module.exports = {selfTest, MUTATIONS};
