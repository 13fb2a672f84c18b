// Random text built to stress GPT-2's pre-tokenizer: contractions in both
// cases, runs of spaces, tabs and newlines, digits, punctuation runs,
// non-ASCII letters and digits, combining marks, emoji (with ZWJ and skin
// tones), Unicode spaces, "<|endoftext|>" as plain text. Valid UTF-8.
//   node dev/data/adversarial_text.js SEED CHARS > FILE
'use strict';
const seed = Number(process.argv[2] || 1) >>> 0;
const chars = Number(process.argv[3] || 20000);
let state = seed || 1;
function random() { // mulberry32
    state = (state + 0x6D2B79F5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (list) => list[Math.floor(random() * list.length)];
const pieces = [
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'LL", "n't", "''", "'",
    "don't", "I'm", "we'll", "they're", "it's", "O'Neil", "rock'n'roll", "'''s",
    ' ', '  ', '   ', '        ', '\t', '\t\t', '\n', '\n\n', '\n\n\n', '\r\n', ' \n', '\n ',
    ' \t\n', '\f', '\v', '\u00a0', '\u2003', '\u3000', '\u2028', '\u202f', '\u200b',
    '0', '7', '42', '2024', '3.14159', '1,000,000', '007', '\u0663\u0664', '\u2167', '\u00bd',
    '.', ',', '!', '?', '...', '--', '—', '“', '”', '«»', '(', ')', '[]', '{}', '<|endoftext|>',
    '#$%&', '@', '~', '^', '*', '+=', '//', '\\', '|', '`', '_', '__init__', '->',
    'the', 'The', ' the', 'hello', 'World', 'GPT', 'tokenizer', 'supercalifragilistic',
    'café', 'naïve', 'Straße', 'Ωμέγα', 'Москва', 'привет', 'עברית', 'العربية', 'हिन्दी',
    '日本語', '中文字符', '한국어', 'ไทย', 'e\u0301', 'a\u0308\u0304', 'ǅ', 'ﬁ', 'Ⅻ',
    '😀', '👍🏽', '👨‍👩‍👧‍👦', '🇫🇷', '❤️', '🤖', '\u{1d400}\u{1d401}', '\u{10348}',
];
let out = '';
while (out.length < chars) {
    const piece = pick(pieces);
    const r = random();
    out += r < 0.1 ? piece.repeat(1 + Math.floor(random() * 20)) : piece;
    if (random() < 0.3) out += ' ';
}
process.stdout.write(out);
