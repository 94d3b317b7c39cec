'use strict';
// The placement of the fleet on made-up nodes, end to end without a
// cluster: for each kind of node (each NPU, named by each driver; no
// driver; no NPU), the features NFD would read (pci.device,
// kernel.loadedmodule), the labels the NodeFeatureRule then gives, the
// feature file the npu-facts script (run from its ConfigMap, with /bin/sh,
// against a sysfs tree made for the node) writes where npu-facts runs, the
// labels after that, and which workloads land on the node, tainted as NPU
// nodes are. Each NPU node must get exactly the box of its platform, plus
// npu-facts and the device plugin; other nodes none of them.
//
// The rule is evaluated as NFD evaluates it (nodefeaturerule/expression.go):
// matchFeatures is an AND, an instance feature (pci.device) matches when
// one instance matches all its expressions, a missing key matches only
// DoesNotExist. The feature file is read as NFD's local source reads it
// (source/local/local.go): "# +no-label" keeps the next line from the
// labels.

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const M = require('./manifests');

const NFD_FEATURES_DIR = '/etc/kubernetes/node-feature-discovery/features.d';
const TAINT = {key: 'irontune.io/npu', value: 'true', effect: 'NoSchedule'};

// The nodes. pci: the NPU's PCI function as sysfs shows it; vbnv: the name
// the driver gives it (in-tree: RyzenAI-npuN; amd/xdna-driver: marketing
// names, since 2026-01 the board's name from its firmware).
const NODES = [
  {name: 'Phoenix', pci: ['1022', '1502', '00'], vbnv: 'NPU Phoenix', expect: ['npu1', 'phoenix']},
  {name: 'Hawk Point (in-tree driver)', pci: ['1022', '1502', '00'], vbnv: 'RyzenAI-npu1', expect: ['npu1', 'phoenix']},
  {name: 'Strix', pci: ['1022', '17f0', '10'], vbnv: 'NPU Strix', expect: ['npu2', 'strix']},
  {name: 'Strix (in-tree driver)', pci: ['1022', '17f0', '10'], vbnv: 'RyzenAI-npu4', expect: ['npu2', 'strix']},
  {name: 'Strix Halo', pci: ['1022', '17f0', '11'], vbnv: 'NPU Strix Halo', expect: ['npu2', 'strix-halo']},
  {name: 'Strix Halo (in-tree driver)', pci: ['1022', '17f0', '11'], vbnv: 'RyzenAI-npu5', expect: ['npu2', 'strix-halo']},
  {name: 'Krackan', pci: ['1022', '17f0', '20'], vbnv: 'NPU Krackan', expect: ['npu2', 'krackan']},
  {name: 'Krackan (2025 spelling)', pci: ['1022', '17f0', '20'], vbnv: 'NPU Kracken', expect: ['npu2', 'krackan']},
  {name: 'Krackan (in-tree driver)', pci: ['1022', '17f0', '20'], vbnv: 'RyzenAI-npu6', expect: ['npu2', 'krackan']},
  {name: 'Krackan 1 on rev 0x10 (named by its firmware)', pci: ['1022', '17f0', '10'], vbnv: 'NPU Krackan 1', expect: ['npu2', 'krackan']},
  {name: 'Gorgon Point 2 (named by its firmware)', pci: ['1022', '17f0', '10'], vbnv: 'NPU Gorgon Point 2', expect: ['npu2', 'gorgon-point']},
  {name: 'Strix without amdxdna loaded', pci: ['1022', '17f0', '10'], vbnv: null, module: false, expect: null},
  {name: 'an AIE4 NPU (not driven by irontune)', pci: ['1022', '17f1', '10'], vbnv: 'RyzenAI-npu3', expect: null},
  {name: 'no NPU (an AMD GPU)', pci: ['1002', '744c', 'c8'], cls: '0300', vbnv: null, module: false, expect: null},
];

function parseFeatureFile(text) {
  const features = {};
  const labels = {};
  let skipLabel = false;
  let skipFeature = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    if (line.startsWith('#')) {
      if (line === '# +no-label') skipLabel = true;
      else if (line === '# +no-feature') skipFeature = true;
      continue;
    }
    const eq = line.indexOf('=');
    const [k, v] = eq < 0 ? [line, 'true'] : [line.slice(0, eq), line.slice(eq + 1)];
    if (!skipFeature) features[k] = v;
    if (!skipLabel) labels[k] = v;
    skipLabel = false;
    skipFeature = false;
  }
  return {features, labels};
}

// One expression on a key; errors for what NFD would refuse.
function matchExpression(e, present, value, where, problems) {
  const values = e.value || [];
  const none = ['Exists', 'DoesNotExist', 'IsTrue', 'IsFalse'];
  const one = ['Gt', 'Ge', 'Lt', 'Le'];
  if (none.includes(e.op) && values.length) problems.push(`${where}: ${e.op} takes no value`);
  if (['In', 'NotIn', 'InRegexp'].includes(e.op) && !values.length) problems.push(`${where}: ${e.op} needs values`);
  if (one.includes(e.op) && values.length !== 1) problems.push(`${where}: ${e.op} takes one value`);
  if (e.op === 'Exists') return present;
  if (e.op === 'DoesNotExist') return !present;
  if (!present) return false;
  switch (e.op) {
    case 'In': return values.includes(value);
    case 'NotIn': return !values.includes(value);
    case 'InRegexp': return values.some((r) => new RegExp(r).test(value));
    case 'IsTrue': return value === 'true';
    case 'IsFalse': return value === 'false';
    case 'Gt': return Number(value) > Number(values[0]);
    case 'Ge': return Number(value) >= Number(values[0]);
    case 'Lt': return Number(value) < Number(values[0]);
    case 'Le': return Number(value) <= Number(values[0]);
    default:
      problems.push(`${where}: op ${e.op} is not modelled by this simulation`);
      return false;
  }
}

// features: {'pci.device': {instances: [...]}, 'kernel.loadedmodule':
// {flags: Set}, 'local.feature': {attrs: {}}}
function matchTerm(term, features, where, problems) {
  const f = features[term.feature];
  if (!f) {
    problems.push(`${where}: feature ${term.feature} is not modelled by this simulation`);
    return false;
  }
  const exprs = Object.entries(term.matchExpressions || {});
  if (term.matchName) problems.push(`${where}: matchName is not modelled by this simulation`);
  const onMap = (map) => exprs.every(([k, e]) =>
    matchExpression(e, Object.prototype.hasOwnProperty.call(map, k), map[k], `${where} ${k}`, problems));
  if (f.instances) return f.instances.some((inst) => onMap(inst));
  if (f.flags) return onMap(Object.fromEntries([...f.flags].map((x) => [x, ''])));
  return onMap(f.attrs);
}

function evaluate(rules, features, problems) {
  const labels = {};
  for (const rule of rules) {
    const where = `rule "${rule.name}"`;
    const all = (terms) => terms.every((t) => matchTerm(t, features, where, problems));
    const any = rule.matchAny ? rule.matchAny.some((m) => all(m.matchFeatures || [])) : true;
    if (all(rule.matchFeatures || []) && any) Object.assign(labels, rule.labels || {});
  }
  return labels;
}

function tolerates(spec, taint) {
  return (spec.tolerations || []).some((t) =>
    (t.key === taint.key || (t.key === undefined && t.operator === 'Exists')) &&
    (t.effect === undefined || t.effect === taint.effect) &&
    (t.operator === 'Exists' || t.value === taint.value));
}

function lands(w, labels, tainted) {
  const spec = M.podSpec(w);
  const sel = spec.nodeSelector || {};
  if (!Object.entries(sel).every(([k, v]) => labels[k] === v)) return false;
  return !tainted || tolerates(spec, TAINT);
}

// A sysfs tree with the node's PCI function and, where amdxdna took it,
// its accel device.
function makeSysfs(root, node) {
  const dev = path.join(root, 'devices/pci0000:00/0000:c5:00.1');
  fs.mkdirSync(dev, {recursive: true});
  const [vendor, device, rev] = node.pci;
  const files = {vendor: `0x${vendor}`, device: `0x${device}`, revision: `0x${rev}`,
    class: `0x${node.cls || '1180'}00`, subsystem_vendor: '0x1022', subsystem_device: '0x0000'};
  if (node.vbnv) files.vbnv = node.vbnv;
  for (const [k, v] of Object.entries(files)) fs.writeFileSync(path.join(dev, k), `${v}\n`);
  if (node.vbnv && node.module !== false) {
    fs.mkdirSync(path.join(root, 'bus/pci/drivers/amdxdna'), {recursive: true});
    fs.symlinkSync('../../../bus/pci/drivers/amdxdna', path.join(dev, 'driver'));
    fs.mkdirSync(path.join(root, 'class/accel/accel0'), {recursive: true});
    fs.symlinkSync('../../../devices/pci0000:00/0000:c5:00.1', path.join(root, 'class/accel/accel0/device'));
  }
}

// The npu-facts script and the workload that runs it.
function factsScript(inv, fail) {
  for (const w of inv.workloads()) {
    const spec = M.podSpec(w);
    for (const {c} of M.containers(spec)) {
      const cmd = [...(c.command || []), ...(c.args || [])].map(String);
      if (!/(^|\/)(ba)?sh$/.test(cmd[0] || '') || !cmd[1] || !/npu-facts/.test(cmd[1])) continue;
      const m = M.mountOf(spec, c, cmd[1]);
      const cm = m && m.volume && m.volume.configMap && inv.find('ConfigMap', m.volume.configMap.name);
      const text = cm && (cm.obj.data || {})[m.rest];
      if (!text) {
        fail(w, `container ${c.name}: ${cmd[1]} is in no ConfigMap it mounts`);
        return null;
      }
      const out = M.mountOf(spec, c, `${NFD_FEATURES_DIR}/irontune-npu`);
      if (!out || !out.volume || !out.volume.hostPath ||
          out.volume.hostPath.path.replace(/\/$/, '') !== NFD_FEATURES_DIR ||
          out.mount.readOnly) {
        fail(w, `container ${c.name}: does not write into the node's ${NFD_FEATURES_DIR}, where NFD's local source reads`);
      }
      return {w, text};
    }
  }
  fail(null, 'no workload runs the npu-facts script (sh .../npu-facts.sh)');
  return null;
}

// What the facts script wrote on each node, by the script's text: most
// runs of the self-test change something else.
const factsRuns = new Map();

function runFacts(text, node, n, tmp) {
  const key = `${n}\0${text}`;
  if (factsRuns.has(key)) return factsRuns.get(key);
  const root = path.join(tmp, `node${n}`);
  const out = path.join(root, 'features.d');
  fs.mkdirSync(out, {recursive: true});
  makeSysfs(path.join(root, 'sys'), node);
  const script = path.join(root, 'npu-facts.sh');
  fs.writeFileSync(script, text);
  const run = spawnSync('/bin/sh', [script, '--once'], {encoding: 'utf8',
    env: {PATH: process.env.PATH, SYSFS: path.join(root, 'sys'), FEATURES_DIR: out}});
  const file = path.join(out, 'irontune-npu');
  const result = {status: run.status, stderr: run.stderr || '',
    text: fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '',
    others: fs.readdirSync(out).filter((f) => !f.startsWith('.') && f !== 'irontune-npu')};
  factsRuns.set(key, result);
  return result;
}

function simulate(docs, fail) {
  const inv = new M.Inventory(docs);
  const rules = inv.ofKind('NodeFeatureRule').flatMap((r) => r.obj.spec.rules || []);
  const facts = factsScript(inv, fail);
  if (!facts || rules.length === 0) {
    if (rules.length === 0) fail(null, 'no NodeFeatureRule');
    return;
  }
  const workloads = inv.workloads();
  const boxes = workloads.filter((w) => M.containers(M.podSpec(w)).some(({c}) =>
    M.program(c) === 'irontuned' && [...(c.command || []), ...(c.args || [])].some((a) => String(a).startsWith('--device=xrt:'))));
  const reached = new Set();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'irontune-nfd-'));
  try {
    NODES.forEach((node, n) => {
      const where = `node "${node.name}"`;
      const problems = [];
      const features = {
        'pci.device': {instances: [{vendor: node.pci[0], device: node.pci[1],
          class: node.cls || '1180', subsystem_vendor: '1022', subsystem_device: '0000'}]},
        'kernel.loadedmodule': {flags: new Set(node.module === false ? ['kvm_amd'] : ['kvm_amd', 'amdxdna'])},
        'local.feature': {attrs: {}},
      };
      let labels = evaluate(rules, features, problems);
      // npu-facts runs where its nodeSelector now matches.
      if (lands(facts.w, labels, labels['irontune.io/npu'] === 'true')) {
        const run = runFacts(facts.text, node, n, tmp);
        if (run.status !== 0) {
          problems.push(`npu-facts --once exited ${run.status}: ${run.stderr.trim()}`);
        } else {
          const parsed = parseFeatureFile(run.text);
          if (Object.keys(parsed.labels).length) {
            problems.push(`npu-facts wrote labels (${Object.keys(parsed.labels).join(', ')}): NFD would put them on the node as they are; features only (# +no-label)`);
          }
          if (run.others.length) problems.push(`npu-facts left another file NFD would read: ${run.others.join(', ')}`);
          features['local.feature'].attrs = parsed.features;
          labels = evaluate(rules, features, problems);
        }
      }
      const npu = labels['irontune.io/npu'] === 'true';
      const got = npu ? [labels['irontune.io/npu-generation'] || 'no generation',
        labels['irontune.io/npu-platform'] || 'no platform'] : null;
      if (JSON.stringify(got) !== JSON.stringify(node.expect)) {
        problems.push(`labelled ${got ? got.join('/') : 'no NPU'}, expected ${node.expect ? node.expect.join('/') : 'no NPU'} (labels: ${JSON.stringify(labels)})`);
      }
      const here = workloads.filter((w) => lands(w, labels, npu));
      const boxesHere = here.filter((w) => boxes.includes(w));
      boxesHere.forEach((w) => reached.add(w));
      if (node.expect) {
        if (boxesHere.length !== 1 ||
            (M.podSpec(boxesHere[0]).nodeSelector || {})['irontune.io/npu-platform'] !== node.expect[1]) {
          problems.push(`gets ${boxesHere.map(M.describe).join(', ') || 'no box'}; one box of ${node.expect[1]} expected`);
        }
        if (!here.includes(facts.w)) problems.push('does not run npu-facts');
      } else if (here.some((w) => M.podSpec(w).nodeSelector && Object.keys(M.podSpec(w).nodeSelector).some((k) => k.startsWith('irontune.io/')))) {
        problems.push(`runs ${here.map(M.describe).join(', ')} without an NPU irontune drives`);
      }
      for (const p of problems) fail(null, `NFD: ${where}: ${p}`);
    });
  } finally {
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  for (const b of boxes) {
    if (!reached.has(b)) fail(b, 'NFD: no node of the simulation gets this box');
  }
  return NODES.length;
}

module.exports = {simulate, parseFeatureFile, NODES};
