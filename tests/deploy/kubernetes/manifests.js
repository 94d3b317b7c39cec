'use strict';
// Reading the manifests, and what the checks share: who is where, label
// selectors, a pod's containers and volumes.

const fs = require('fs');
const path = require('path');

// Every .yaml and .yml file under `dir`, relative to it, sorted.
function yamlFiles(dir, sub = '') {
  const out = [];
  for (const entry of fs.readdirSync(path.join(dir, sub), {withFileTypes: true})) {
    const rel = path.join(sub, entry.name);
    if (entry.isDirectory()) out.push(...yamlFiles(dir, rel));
    else if (/\.ya?ml$/.test(entry.name)) out.push(rel);
  }
  return out.sort();
}

// The documents of every file: {file, index, obj}. YAML errors (syntax,
// duplicate keys) are failures.
function loadTree(dir, YAML, fail) {
  const docs = [];
  const files = yamlFiles(dir);
  for (const file of files) {
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    const parsed = YAML.parseAllDocuments(text, {uniqueKeys: true});
    parsed.forEach((d, index) => {
      const where = `${file}#${index + 1}`;
      for (const e of d.errors) fail(where, `YAML: ${e.message.split('\n')[0]}`);
      if (d.errors.length) return;
      const obj = d.toJS({maxAliasCount: 1000});
      if (obj === null || obj === undefined) return;
      docs.push({file, index: index + 1, obj});
    });
  }
  return {files, docs};
}

function describe(doc) {
  const o = doc.obj || {};
  const name = o.metadata && o.metadata.name;
  return `${doc.file}#${doc.index} ${o.kind || '?'}/${name || '?'}`;
}

const WORKLOADS = new Set(['DaemonSet', 'Deployment', 'StatefulSet']);
const CLUSTER_SCOPED = new Set(['Namespace', 'NodeFeatureRule',
  'ClusterRole', 'ClusterRoleBinding', 'PriorityClass', 'StorageClass',
  'CustomResourceDefinition']);

function labelsMatch(selector, labels) {
  if (!selector) return false;
  labels = labels || {};
  for (const [k, v] of Object.entries(selector.matchLabels || {})) {
    if (labels[k] !== v) return false;
  }
  for (const e of selector.matchExpressions || []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const values = e.values || [];
    if (e.operator === 'In' && !(has && values.includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && has && values.includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

class Inventory {
  constructor(docs) {
    this.docs = docs;
  }
  ofKind(kind) {
    return this.docs.filter((d) => d.obj.kind === kind);
  }
  find(kind, name, namespace) {
    return this.docs.find((d) => d.obj.kind === kind &&
        d.obj.metadata && d.obj.metadata.name === name &&
        (namespace === undefined || d.obj.metadata.namespace === namespace));
  }
  workloads() {
    return this.docs.filter((d) => WORKLOADS.has(d.obj.kind) && podSpec(d));
  }
}

function podSpec(doc) {
  const t = doc.obj.spec && doc.obj.spec.template;
  return t && t.spec;
}

function podLabels(doc) {
  const t = doc.obj.spec && doc.obj.spec.template;
  return (t && t.metadata && t.metadata.labels) || {};
}

// [{c, init}] for every container of a pod spec.
function containers(spec) {
  return [...(spec.initContainers || []).map((c) => ({c, init: true})),
          ...(spec.containers || []).map((c) => ({c, init: false}))];
}

// The program a container runs: its command's first word, else its args'.
function program(c) {
  const argv = [...(c.command || []), ...(c.args || [])];
  return argv.length ? path.basename(String(argv[0])) : '';
}

// "--name=value" or "--name value" arguments into [{flag, value, raw}].
function flagsOf(argv, takesValue) {
  const out = [];
  for (let i = 0; i < argv.length; i++) {
    const a = String(argv[i]);
    if (!a.startsWith('-')) {
      out.push({positional: a});
      continue;
    }
    const eq = a.indexOf('=');
    if (eq > 0) {
      out.push({flag: a.slice(0, eq), value: a.slice(eq + 1), raw: a});
    } else if (takesValue && takesValue(a) && i + 1 < argv.length) {
      out.push({flag: a, value: String(argv[++i]), raw: a});
    } else {
      out.push({flag: a, value: null, raw: a});
    }
  }
  return out;
}

// The volume mounted at the deepest mount holding `file` in container `c`
// of pod `spec`: {mount, volume, rest} (rest: the path below the mount), or
// null.
function mountOf(spec, c, file) {
  let best = null;
  for (const m of c.volumeMounts || []) {
    const dir = m.mountPath.replace(/\/+$/, '');
    if (file.startsWith(dir + '/') && (!best || dir.length > best.dir.length)) {
      best = {dir, mount: m};
    }
  }
  if (!best) return null;
  const volume = (spec.volumes || []).find((v) => v.name === best.mount.name);
  return {mount: best.mount, volume, rest: file.slice(best.dir.length + 1)};
}

// A container's env value for `name`: {value} or {configMapKeyRef} etc.
function envOf(c, name) {
  return (c.env || []).find((e) => e.name === name);
}

module.exports = {
  yamlFiles, loadTree, describe, labelsMatch, Inventory, podSpec, podLabels,
  containers, program, flagsOf, mountOf, envOf, WORKLOADS, CLUSTER_SCOPED,
};
