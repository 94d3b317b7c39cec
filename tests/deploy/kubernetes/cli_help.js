'use strict';
// The flags a program really takes, read from its --help (CLI11's format):
// each option's names, whether it takes a value, and its choices where the
// help lists them ({a,b,c}).

const {execFileSync} = require('child_process');

function parseHelp(text) {
  const flags = new Map();
  const subcommands = new Set();
  let section = '';
  for (const line of text.split('\n')) {
    if (/^\S.*:$/.test(line)) {
      section = line;
      continue;
    }
    // A value's type follows its flag after one space (TEXT, UINT,
    // TEXT:{a,b}=a, ...); the description starts two or more further on.
    const m = line.match(/^ {2}(-\S+)(?: ([A-Z]+(?:[:=[ ]\S*)?))?(?: |$)/);
    if (section === 'Options:' && m) {
      const names = m[1].replace(/\{[^}]*\}/g, '').split(',');
      const type = m[2] || null;
      const choices = type && type.match(/:\{([^}]*)\}/);
      for (const name of names) {
        if (name.startsWith('--')) {
          flags.set(name, {takesValue: Boolean(type),
            choices: choices ? choices[1].split(',') : null});
        }
      }
    }
    const s = line.match(/^ {2}([a-z][-a-z]*) {2,}/);
    if (section === 'Subcommands:' && s) subcommands.add(s[1]);
  }
  return {flags, subcommands};
}

// A program's help, and its subcommands' on demand.
class Cli {
  constructor(binary) {
    this.binary = binary;
    this.top = parseHelp(execFileSync(binary, ['--help'], {encoding: 'utf8'}));
    this.subs = new Map();
  }
  sub(name) {
    if (!this.subs.has(name)) {
      this.subs.set(name, parseHelp(execFileSync(this.binary, [name, '--help'],
          {encoding: 'utf8'})));
    }
    return this.subs.get(name);
  }
}

module.exports = {Cli, parseHelp};
