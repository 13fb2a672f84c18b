// Reference GPT-2 encoding by the npm package gpt-3-encoder (its own
// JavaScript encoder), for the parity tests and the tokenizer benchmark:
//   node dev/data/gpt3_encoder_ids.js FILE        ids of FILE (UTF-8), one line
//   node dev/data/gpt3_encoder_ids.js --time FILE  also "seconds bytes" on stderr
// encode() concatenates its output array once per pre-token (quadratic in
// the tokens), so the text goes in pieces cut after a newline that sits
// between two non-space characters: no pre-token crosses such a cut, so the
// ids are those of the whole text.
'use strict';
const fs = require('fs');
const path = require('path');
const args = process.argv.slice(2);
const time = args[0] === '--time';
const file = time ? args[1] : args[0];
if (!file) {
    console.error('usage: node gpt3_encoder_ids.js [--time] FILE');
    process.exit(2);
}
const root = path.join(__dirname, '..', '..');
const { encode } = require(path.join(root, 'data/npm/node_modules/gpt-3-encoder'));
const bytes = fs.readFileSync(file);
const text = bytes.toString('utf8');
const t0 = process.hrtime.bigint();
const pieces = text.split(/(?<=\S\n)(?=\S)/u);
const ids = [];
for (const piece of pieces) {
    for (const id of encode(piece)) ids.push(id);
}
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
process.stdout.write(ids.join(' ') + '\n');
if (time) process.stderr.write(`${seconds} ${bytes.length}\n`);
