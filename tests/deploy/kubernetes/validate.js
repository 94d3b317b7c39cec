#!/usr/bin/env node
'use strict';
// Checks the Kubernetes manifests in deploy/kubernetes without a cluster:
// every document of every file against its kind's published schema
// (schemas.js), what the manifests name of each other and of irontuned and
// irontune-client (checks.js), and the placement of the boxes by Node
// Feature Discovery on made-up nodes (nfd_sim.js).
//
//   validate.js --modules DIR [--irontuned BIN] [--client BIN]
//               [--nfd-crd FILE] [--kubectl BIN] [--self-test] MANIFESTS
//
// --modules: the node_modules that scripts/install-deps --k8s-tests
// installs. --irontuned, --client: the built binaries, whose --help gives
// the flags they take (without them flags are not checked). --nfd-crd: a
// CRD file NFD publishes, checked against as well. --kubectl: a kubectl
// (1.21 or later) to render each kustomization with, offline. --self-test:
// instead, check that each of a list of broken copies of the manifests
// fails, and for the reason meant.
//
// Exit 0: all passed; 1: a failure; 2: usage; 77: the npm packages are not
// installed (reported as skipped).

const fs = require('fs');
const path = require('path');
const {execFileSync} = require('child_process');
const M = require('./manifests');

function usage(message) {
  process.stderr.write(`validate.js: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = {selfTest: false};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === '--modules') args.modules = value();
    else if (a === '--irontuned') args.irontuned = value();
    else if (a === '--client') args.client = value();
    else if (a === '--nfd-crd') args.nfdCrd = value();
    else if (a === '--kubectl') args.kubectl = value();
    else if (a === '--self-test') args.selfTest = true;
    else if (a.startsWith('-')) usage(`unknown option ${a}`);
    else args.dir = a;
  }
  if (!args.modules || !args.dir) usage('give --modules DIR and the manifests\' directory');
  return args;
}

// Everything on one tree: [{where, message}].
function validate(root, env, mutate) {
  const failures = [];
  const fail = (where, message) => failures.push({
    where: where === null ? '' : typeof where === 'string' ? where : M.describe(where),
    message,
  });
  const {files, docs} = M.loadTree(root, env.YAML, fail);
  if (mutate) mutate(docs, root);
  for (const d of docs) {
    for (const p of env.schemas.check(d.obj)) fail(d, p);
  }
  const ctx = {fail, YAML: env.YAML, daemon: env.daemon, client: env.client,
    root, files, note: (n) => env.notes.add(n)};
  ctx.inv = new M.Inventory(docs);
  ctx.platforms = () => new Set(ctx.inv.workloads()
      .map((w) => (M.podSpec(w).nodeSelector || {})['irontune.io/npu-platform'])
      .filter(Boolean));
  require('./checks').runChecks(docs, ctx);
  const nodes = require('./nfd_sim').simulate(docs, fail);
  return {failures, files, docs, nodes};
}

// kubectl kustomize on every kustomization not taken by another: offline,
// and it must give the documents of the files it takes.
function kustomize(root, kubectl, docs, fail, YAML) {
  let version;
  try {
    version = JSON.parse(execFileSync(kubectl, ['version', '--client', '-o', 'json'],
        {encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']})).clientVersion;
  } catch (e) {
    return `not run: ${kubectl} version failed`;
  }
  if (Number(version.major) === 1 && parseInt(version.minor, 10) < 21) {
    return `not run: kubectl ${version.gitVersion} embeds kustomize 2, which takes no directories in resources`;
  }
  const kust = docs.filter((d) => d.obj.kind === 'Kustomization');
  const taken = new Set(kust.flatMap((k) => (k.obj.resources || []).map((r) =>
    path.normalize(path.join(path.dirname(k.file), r)))));
  const roots = kust.map((k) => path.dirname(k.file)).filter((d) => !taken.has(d));
  for (const dir of roots) {
    let out;
    try {
      out = execFileSync(kubectl, ['kustomize', path.join(root, dir)],
          {encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20000});
    } catch (e) {
      fail(null, `kubectl kustomize ${dir}: ${String(e.stderr || e.message).trim()}`);
      continue;
    }
    const rendered = YAML.parseAllDocuments(out).map((d) => d.toJS())
        .filter(Boolean).map((o) => `${o.kind}/${o.metadata.name}`);
    const files = takenFiles(kust, dir);
    const expected = docs.filter((d) => files.has(d.file))
      .map((d) => `${d.obj.kind}/${d.obj.metadata.name}`);
    const missing = expected.filter((e) => !rendered.includes(e));
    if (missing.length || rendered.length !== expected.length) {
      fail(null, `kubectl kustomize ${dir}: gives ${rendered.length} objects, the files ${expected.length}; missing ${missing.join(', ') || 'none'}`);
    }
  }
  return `kubectl ${version.gitVersion} kustomize: ${roots.join(', ')}`;
}

// The files a kustomization takes, through the directories it takes.
function takenFiles(kust, dir) {
  const files = new Set();
  const k = kust.find((x) => path.dirname(x.file) === dir);
  for (const r of (k && k.obj.resources) || []) {
    const target = path.normalize(path.join(dir, r));
    if (kust.some((x) => path.dirname(x.file) === target)) {
      for (const f of takenFiles(kust, target)) files.add(f);
    } else {
      files.add(target);
    }
  }
  return files;
}

function environment(args) {
  const need = ['kubernetes-models', '@kubernetes-models/cloudnative-pg', 'ajv', 'yaml'];
  const missing = need.filter((p) => !fs.existsSync(path.join(args.modules, p, 'package.json')));
  if (missing.length) {
    console.log(`skipped: ${missing.join(', ')} not installed in ${args.modules} (scripts/install-deps --k8s-tests)`);
    process.exit(77);
  }
  const req = require('module').createRequire(path.join(args.modules, 'index.js'));
  const {Schemas} = require('./schemas');
  const {Cli} = require('./cli_help');
  return {
    YAML: req('yaml'),
    schemas: new Schemas(args.modules, args.nfdCrd),
    daemon: args.irontuned ? new Cli(args.irontuned) : null,
    client: args.client ? new Cli(args.client) : null,
    notes: new Set(),
  };
}

function report(failures) {
  for (const f of failures) console.log(`FAIL ${f.where ? f.where + ': ' : ''}${f.message}`);
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const env = environment(args);
  const started = Date.now();
  if (args.selfTest) {
    const {selfTest} = require('./self_test');
    process.exit(selfTest(args.dir, env, validate) ? 0 : 1);
  }
  const {failures, files, docs, nodes} = validate(args.dir, env);
  let kubectlNote = 'kubectl kustomize: not run (no kubectl)';
  const kubectl = args.kubectl;
  if (kubectl) {
    kubectlNote = kustomize(args.dir, kubectl, docs,
        (w, m) => failures.push({where: w || '', message: m}), env.YAML);
  }
  report(failures);
  for (const n of env.notes) console.log(`note: ${n}`);
  console.log(`NFD: ${nodes || 0} made-up nodes labelled and given their workloads`);
  console.log(kubectlNote);
  console.log(`flags: ${env.daemon ? 'irontuned --help' : 'irontuned not given, not checked'}; ` +
      `${env.client ? 'irontune-client --help' : 'irontune-client not given, not checked'}`);
  const kinds = new Map();
  for (const d of docs) kinds.set(d.obj.kind, (kinds.get(d.obj.kind) || 0) + 1);
  console.log(`${docs.length} documents in ${files.length} files ` +
      `(${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')}), ${Date.now() - started} ms`);
  console.log(failures.length ? `${failures.length} failed` : 'all passed');
  process.exit(failures.length ? 1 : 0);
}

if (require.main === module) main();

module.exports = {validate};
