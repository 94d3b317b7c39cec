'use strict';
// Each document against the published schema of its kind:
// - Kubernetes' own kinds: kubernetes-models (validators generated from
//   Kubernetes 1.33's OpenAPI schemas), plus unknown fields from its type
//   declarations (dts_types.js);
// - CloudNativePG's Cluster: @kubernetes-models/cloudnative-pg (generated
//   from CloudNativePG 1.24's CRD), the same way;
// - NFD's NodeFeatureRule: nodefeaturerule.schema.json (no package ships
//   NFD's CRD), and with --nfd-crd FILE the CRD NFD publishes too;
// - kustomize's Kustomization: the fields these manifests use.
// Any other kind fails. Then what the API server checks beyond the
// schemas and the manifests use: names, and the keys a Secret's type
// requires.

const fs = require('fs');
const path = require('path');
const {DtsTypes} = require('./dts_types');

// The API versions a cluster of Kubernetes 1.25 or later serves for the
// kinds kubernetes-models has (it also has versions no longer served).
const SERVED = new Set(['v1', 'apps/v1', 'batch/v1', 'policy/v1',
  'networking.k8s.io/v1', 'rbac.authorization.k8s.io/v1',
  'scheduling.k8s.io/v1', 'storage.k8s.io/v1', 'postgresql.cnpg.io/v1']);

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const PORT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

class Schemas {
  constructor(modules, nfdCrd) {
    this.modules = modules;
    this.req = require('module').createRequire(path.join(modules, 'index.js'));
    this.types = new DtsTypes(modules);
    const Ajv = this.req('ajv');
    this.ajv = new (Ajv.default || Ajv)({allErrors: true, strict: false, validateFormats: false});
    this.nfd = this.ajv.compile(JSON.parse(fs.readFileSync(
        path.join(__dirname, 'nodefeaturerule.schema.json'), 'utf8')));
    this.nfdCrd = nfdCrd ? this.compileCrd(nfdCrd) : null;
  }

  // The v1alpha1 schema of NFD's NodeFeatureRule CRD in `file`, closed to
  // unknown fields as strict field validation closes it.
  compileCrd(file) {
    const YAML = this.req('yaml');
    const crd = YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))
        .map((d) => d.toJS())
        .find((d) => d && d.kind === 'CustomResourceDefinition' &&
              d.metadata.name === 'nodefeaturerules.nfd.k8s-sigs.io');
    if (!crd) throw new Error(`${file}: no CRD nodefeaturerules.nfd.k8s-sigs.io`);
    const version = crd.spec.versions.find((v) => v.name === 'v1alpha1');
    const close = (s) => {
      if (!s || typeof s !== 'object') return;
      if (s.properties && s.additionalProperties === undefined &&
          !s['x-kubernetes-preserve-unknown-fields']) {
        s.additionalProperties = false;
      }
      for (const v of Object.values(s.properties || {})) close(v);
      if (s.items) close(s.items);
      if (typeof s.additionalProperties === 'object') close(s.additionalProperties);
    };
    const schema = JSON.parse(JSON.stringify(version.schema.openAPIV3Schema));
    close(schema);
    schema.properties.metadata = {type: 'object'};
    return this.ajv.compile(schema);
  }

  ajvErrors(validate) {
    return validate.errors.map((e) => `${e.instancePath || '/'} ${e.message}` +
        (e.params && e.params.additionalProperty
          ? ` (${e.params.additionalProperty})` : '') +
        (e.params && e.params.allowedValues
          ? ` (${e.params.allowedValues.join(', ')})` : ''));
  }

  // Problems of one document.
  check(obj) {
    const {apiVersion, kind} = obj;
    if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
      return ['no apiVersion and kind'];
    }
    if (apiVersion === 'kustomize.config.k8s.io/v1beta1' && kind === 'Kustomization') {
      return this.kustomization(obj);
    }
    if (apiVersion === 'nfd.k8s-sigs.io/v1alpha1' && kind === 'NodeFeatureRule') {
      const problems = [];
      if (!this.nfd(obj)) problems.push(...this.ajvErrors(this.nfd));
      if (this.nfdCrd && !this.nfdCrd(obj)) {
        problems.push(...this.ajvErrors(this.nfdCrd).map((p) => `NFD's CRD: ${p}`));
      }
      problems.push(...this.types.check(obj.metadata,
          path.join(this.modules, '@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta.d.ts'),
          'IObjectMeta', 'metadata'));
      return problems.concat(this.names(obj));
    }
    if (!SERVED.has(apiVersion)) {
      return [`unknown kind ${kind} of ${apiVersion}: not an API version these checks know to be served`];
    }
    let dir;
    let model;
    if (apiVersion === 'postgresql.cnpg.io/v1') {
      dir = path.join('@kubernetes-models/cloudnative-pg', apiVersion);
    } else {
      dir = path.join('kubernetes-models', apiVersion);
    }
    try {
      model = this.req(dir)[kind];
    } catch (e) {
      model = undefined;
    }
    if (typeof model !== 'function' || !fs.existsSync(path.join(this.modules, dir, `${kind}.d.ts`))) {
      return [`unknown kind ${kind} of ${apiVersion}: no published schema for it here`];
    }
    const problems = [];
    try {
      new model(obj).validate();
    } catch (e) {
      problems.push(...String(e.message).split(', ').map((m) => m.replace(/^data/, '')));
    }
    problems.push(...this.types.check(obj, path.join(this.modules, dir, `${kind}.d.ts`),
        `I${kind}`, kind));
    return problems.concat(this.names(obj));
  }

  kustomization(obj) {
    const problems = [];
    for (const key of Object.keys(obj)) {
      if (!['apiVersion', 'kind', 'resources'].includes(key)) {
        problems.push(`.${key}: a Kustomization field these checks do not model`);
      }
    }
    if (!Array.isArray(obj.resources) || obj.resources.some((r) => typeof r !== 'string')) {
      problems.push('.resources: must be a list of paths');
    }
    return problems;
  }

  // What the API server checks beyond the schemas.
  names(obj) {
    const problems = [];
    const meta = obj.metadata || {};
    const dnsLabel = ['Namespace', 'Service'].includes(obj.kind);
    if (typeof meta.name !== 'string' ||
        !(dnsLabel ? DNS_LABEL : DNS_SUBDOMAIN).test(meta.name) ||
        meta.name.length > (dnsLabel ? 63 : 253)) {
      problems.push(`metadata.name ${JSON.stringify(meta.name)}: not a DNS-1123 ${dnsLabel ? 'label' : 'subdomain'}`);
    }
    for (const [where, labels] of [['metadata.labels', meta.labels],
      ['spec.template.metadata.labels',
        obj.spec && obj.spec.template && obj.spec.template.metadata &&
        obj.spec.template.metadata.labels]]) {
      for (const [k, v] of Object.entries(labels || {})) {
        const [prefix, name] = k.includes('/') ? k.split('/') : [null, k];
        if ((prefix !== null && !DNS_SUBDOMAIN.test(prefix)) ||
            !/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name) || name.length > 63) {
          problems.push(`${where}: bad label key ${k}`);
        }
        if (typeof v !== 'string' || v.length > 63 ||
            !/^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/.test(v)) {
          problems.push(`${where}: bad value of label ${k}: ${JSON.stringify(v)}`);
        }
      }
    }
    const spec = obj.spec && obj.spec.template && obj.spec.template.spec;
    if (spec) {
      const seen = new Set();
      for (const c of [...(spec.initContainers || []), ...(spec.containers || [])]) {
        if (!DNS_LABEL.test(c.name || '')) problems.push(`container name ${c.name}: not a DNS-1123 label`);
        if (seen.has(c.name)) problems.push(`container name ${c.name}: used twice`);
        seen.add(c.name);
        for (const p of c.ports || []) {
          if (p.name !== undefined && (!PORT_NAME.test(p.name) || p.name.length > 15 ||
              !/[a-z]/.test(p.name))) {
            problems.push(`container ${c.name}: port name ${p.name}: not an IANA service name`);
          }
        }
      }
      const volumes = new Set();
      for (const v of spec.volumes || []) {
        if (!DNS_LABEL.test(v.name || '')) problems.push(`volume name ${v.name}: not a DNS-1123 label`);
        if (volumes.has(v.name)) problems.push(`volume ${v.name}: declared twice`);
        volumes.add(v.name);
      }
    }
    if (obj.kind === 'Secret') {
      const keys = new Set([...Object.keys(obj.data || {}), ...Object.keys(obj.stringData || {})]);
      const need = {'kubernetes.io/tls': ['tls.crt', 'tls.key'],
        'kubernetes.io/basic-auth': ['username', 'password']}[obj.type] || [];
      for (const k of need) {
        if (!keys.has(k)) problems.push(`a Secret of type ${obj.type} needs the key ${k}`);
      }
    }
    return problems;
  }
}

module.exports = {Schemas};
