'use strict';
// Unknown fields, from the type declarations kubernetes-models ships.
//
// kubernetes-models' validators are compiled from Kubernetes' published
// OpenAPI schemas, which leave objects open: a misspelt field passes them,
// and the API server drops it or, with strict field validation (kubectl
// 1.27 and later), refuses it. The package's .d.ts files, generated from
// the same schemas, list every field of every type. This reads them (the
// small part of TypeScript they use: interfaces, type aliases, imports,
// Array<T>, T[], unions, object literals and index signatures) and walks a
// document along them, reporting each field its type does not have.

const fs = require('fs');
const path = require('path');

function tokenize(text) {
  const tokens = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === '\\' ? 2 : 1;
      tokens.push({t: 'str', v: text.slice(i + 1, j)});
      i = j + 1;
    } else if (/[A-Za-z_$]/.test(c)) {
      let j = i;
      while (j < text.length && /[\w$.]/.test(text[j])) j++;
      tokens.push({t: 'id', v: text.slice(i, j)});
      i = j;
    } else if (/[0-9]/.test(c)) {
      let j = i;
      while (j < text.length && /[0-9.eE+-]/.test(text[j])) j++;
      tokens.push({t: 'num', v: text.slice(i, j)});
      i = j;
    } else {
      tokens.push({t: 'p', v: c});
      i++;
    }
  }
  return tokens;
}

const PRIMITIVES = new Set(['string', 'number', 'boolean', 'null', 'any',
  'unknown', 'true', 'false', 'object', 'undefined', 'never']);

class Parser {
  constructor(tokens) {
    this.tokens = tokens;
    this.i = 0;
  }
  peek(v) {
    const t = this.tokens[this.i];
    return t && t.t === 'p' && t.v === v;
  }
  take(v) {
    if (!this.peek(v)) {
      const t = this.tokens[this.i];
      throw new Error(`expected '${v}' at token ${this.i} (${t ? t.v : 'end'})`);
    }
    this.i++;
  }
  type() {
    if (this.peek('|')) this.i++;
    const of = [this.postfix()];
    while (this.peek('|') || this.peek('&')) {
      this.i++;
      of.push(this.postfix());
    }
    return of.length === 1 ? of[0] : {k: 'union', of};
  }
  postfix() {
    let t = this.primary();
    while (this.peek('[') && this.tokens[this.i + 1] &&
           this.tokens[this.i + 1].v === ']') {
      this.i += 2;
      t = {k: 'arr', of: t};
    }
    return t;
  }
  primary() {
    const t = this.tokens[this.i];
    if (!t) throw new Error('unexpected end of type');
    if (t.t === 'p' && t.v === '{') return this.object();
    if (t.t === 'p' && t.v === '(') {
      this.i++;
      const inner = this.type();
      this.take(')');
      return inner;
    }
    if (t.t === 'str' || t.t === 'num') {
      this.i++;
      return {k: 'prim'};
    }
    if (t.t === 'p' && t.v === '-') {
      this.i += 2;
      return {k: 'prim'};
    }
    if (t.t === 'id') {
      this.i++;
      if (t.v === 'Array' && this.peek('<')) {
        this.i++;
        const of = this.type();
        this.take('>');
        return {k: 'arr', of};
      }
      if (this.peek('<')) {  // another generic: its arguments are skipped
        this.i++;
        this.type();
        while (this.peek(',')) {
          this.i++;
          this.type();
        }
        this.take('>');
        return {k: 'prim'};
      }
      if (PRIMITIVES.has(t.v)) return {k: 'prim'};
      return {k: 'ref', name: t.v};
    }
    throw new Error(`unexpected '${t.v}'`);
  }
  object() {
    this.take('{');
    const props = new Map();
    let index = null;
    while (!this.peek('}')) {
      if (this.peek('[')) {
        this.i++;
        this.i++;  // the key's name
        this.take(':');
        this.type();
        this.take(']');
        this.take(':');
        index = this.type();
      } else {
        const key = this.tokens[this.i++];
        if (!key || (key.t !== 'str' && key.t !== 'id')) {
          throw new Error('expected a property name');
        }
        if (this.peek('?')) this.i++;
        this.take(':');
        props.set(key.v, this.type());
      }
      if (this.peek(';') || this.peek(',')) this.i++;
    }
    this.take('}');
    return {k: 'obj', props, index};
  }
}

function parseType(text) {
  const parser = new Parser(tokenize(text));
  const t = parser.type();
  return t;
}

// The index of the brace closing the one at `open`.
function closingBrace(text, open) {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === '\\' ? 2 : 1;
      i = j;
    } else if (c === '{') {
      depth++;
    } else if (c === '}') {
      if (--depth === 0) return i;
    }
  }
  throw new Error('unbalanced braces');
}

class DtsTypes {
  // `modules`: the node_modules directory the packages are in.
  constructor(modules) {
    this.modules = modules;
    this.files = new Map();
  }

  load(file) {
    if (this.files.has(file)) return this.files.get(file);
    const text = fs.readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
    const info = {imports: new Map(), aliases: new Map(), decls: new Map()};
    for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*"([^"]+)"/g)) {
      for (const part of m[1].split(',')) {
        const [name, as] = part.trim().split(/\s+as\s+/);
        if (name) info.imports.set((as || name).trim(), {module: m[2], name});
      }
    }
    for (const m of text.matchAll(/export\s*\{([^}]*)\}/g)) {
      for (const part of m[1].split(',')) {
        const [name, as] = part.trim().split(/\s+as\s+/);
        if (name && as) info.aliases.set(as.trim(), name.trim());
      }
    }
    const iface = /export\s+interface\s+(\w+)[^{]*\{/g;
    let m;
    while ((m = iface.exec(text))) {
      const open = iface.lastIndex - 1;
      const close = closingBrace(text, open);
      info.decls.set(m[1], {text: text.slice(open, close + 1)});
      iface.lastIndex = close + 1;
    }
    for (const t of text.matchAll(/export\s+(?:declare\s+)?type\s+(\w+)\s*=\s*([^;]+);/g)) {
      if (!info.decls.has(t[1])) info.decls.set(t[1], {text: t[2]});
    }
    this.files.set(file, info);
    return info;
  }

  moduleFile(from, spec) {
    const base = spec.startsWith('.') ? path.resolve(path.dirname(from), spec)
                                      : path.join(this.modules, spec);
    for (const f of [base + '.d.ts', path.join(base, 'index.d.ts')]) {
      if (fs.existsSync(f)) return f;
    }
    return null;
  }

  // The declaration `name` means in `file`: {file, type}, or null.
  resolve(file, name, depth = 0) {
    if (depth > 20) return null;
    const info = this.load(file);
    const decl = info.decls.get(name);
    if (decl) {
      if (!decl.type) decl.type = parseType(decl.text);
      return {file, type: decl.type};
    }
    const local = info.aliases.get(name);
    if (local && local !== name) return this.resolve(file, local, depth + 1);
    const imp = info.imports.get(name);
    if (imp) {
      const target = this.moduleFile(file, imp.module);
      if (target) return this.resolve(target, imp.name, depth + 1);
    }
    return null;
  }

  // Problems (strings) of `value` against `type` read in `file`.
  walk(value, type, file, where, problems) {
    if (value === null || value === undefined) return;
    switch (type.k) {
      case 'ref': {
        const r = this.resolve(file, type.name);
        if (r) this.walk(value, r.type, r.file, where, problems);
        return;
      }
      case 'obj':
        if (typeof value !== 'object' || Array.isArray(value)) return;
        for (const [key, v] of Object.entries(value)) {
          const t = type.props.get(key) || type.index;
          if (t) {
            this.walk(v, t, file, `${where}.${key}`, problems);
          } else {
            problems.push(`${where}.${key}: unknown field (not in the schema)`);
          }
        }
        return;
      case 'arr':
        if (!Array.isArray(value)) return;
        value.forEach((v, i) => this.walk(v, type.of, file, `${where}[${i}]`, problems));
        return;
      case 'union': {
        let first = null;
        for (const t of type.of) {
          const p = [];
          this.walk(value, t, file, where, p);
          if (p.length === 0) return;
          if (!first) first = p;
        }
        problems.push(...first);
        return;
      }
      default:
        return;
    }
  }

  // Problems of `doc` against interface `name` of the declaration file
  // `file`.
  check(doc, file, name, where) {
    const r = this.resolve(file, name);
    if (!r) return [`${where}: no type ${name} in ${file}`];
    const problems = [];
    this.walk(doc, r.type, r.file, where, problems);
    return problems;
  }
}

module.exports = {DtsTypes};
