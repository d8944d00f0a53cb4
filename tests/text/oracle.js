// The reference side of engine/text's parity test: Hugging Face tokenizers' Rust core (through
// @anush008/tokenizers, installed by scripts/install-test-oracles.sh) encodes and decodes every
// case of a corpus, and the results are written as JSON for engine/text/oracle_test.cc.
//
// Usage: node oracle.js TOKENIZER_JSON CORPUS OUT_JSON   (NODE_PATH = the oracles' node_modules)
//
// Corpus format: one case per line; lines starting with "#" are comments. Escapes: \n \r \t \\,
// \xHH (one raw byte: cases may hold invalid UTF-8), \u{H...} (a code point). More cases are
// added: the empty text, every case joined with "\n", and kRandomCases (1000) texts drawn with a fixed
// seed from the corpus's characters, whitespace runs, special-token strings, contractions and
// stray bytes (the edges of the split regexes and added-token matching).
//
// Invalid UTF-8: a JS string cannot hold it, so the case's bytes go through TextDecoder (WHATWG:
// each maximal ill-formed subpart becomes U+FFFD, as Rust's from_utf8_lossy does) before HF sees
// them; the C++ side receives the raw bytes ("input_hex") and must reach the same ids.
"use strict";
const fs = require("fs");
const { Tokenizer } = require("@anush008/tokenizers");

function unescape(line) {
  const bytes = [];
  for (let i = 0; i < line.length; ) {
    if (line[i] !== 0x5c /* \ */ || i + 1 >= line.length) {
      bytes.push(line[i++]);
      continue;
    }
    const c = String.fromCharCode(line[i + 1]);
    const simple = { n: 0x0a, r: 0x0d, t: 0x09, "\\": 0x5c }[c];
    if (simple !== undefined) {
      bytes.push(simple);
      i += 2;
    } else if (c === "x") {
      bytes.push(parseInt(Buffer.from(line.subarray(i + 2, i + 4)).toString(), 16));
      i += 4;
    } else if (c === "u") {
      const close = line.indexOf(0x7d /* } */, i);
      const cp = parseInt(Buffer.from(line.subarray(i + 3, close)).toString(), 16);
      bytes.push(...Buffer.from(String.fromCodePoint(cp), "utf8"));
      i = close + 1;
    } else {
      throw new Error(`unknown escape \\${c}`);
    }
  }
  return Buffer.from(bytes);
}

const kRandomCases = 1000;

// A small deterministic PRNG (mulberry32), so every run checks the same texts.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomCases(corpusCases) {
  const chars = [...new Set(corpusCases.flatMap((c) => [...new TextDecoder().decode(c.bytes)]))];
  const pieces = [" ", "  ", "   ", "\n", "\n\n", "\r\n", "\t", " \n ", "\u00a0", "'s", "'LL", "'re",
    "<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>",
    "<|begin_of_text|>", "<mask>", "<r>", "<plain>", "word", "<n> n", "1234567", "3.14", "..."];
  // ACCEL_ORACLE_SEED explores other texts by hand; the test always uses the default.
  const next = rng(Number(process.env.ACCEL_ORACLE_SEED || 20261203));
  const cases = [];
  for (let n = 0; n < kRandomCases; n++) {
    const parts = [];
    const len = 1 + Math.floor(next() * 40);
    for (let i = 0; i < len; i++) {
      const r = next();
      if (r < 0.6) parts.push(Buffer.from(chars[Math.floor(next() * chars.length)], "utf8"));
      else if (r < 0.95) parts.push(Buffer.from(pieces[Math.floor(next() * pieces.length)], "utf8"));
      else parts.push(Buffer.from([0x80 + Math.floor(next() * 0x80)]));  // a stray byte
    }
    cases.push({ name: `random ${n}`, bytes: Buffer.concat(parts) });
  }
  // Assigned code points (as Node's Unicode tables have them), mostly from the BMP: Unicode
  // categories and NFC beyond what the corpus shows. Cases named "random code points" are the
  // only ones oracle_test.cc may excuse, when they hold characters newer than PCRE2's tables.
  const unassigned = /\p{Cn}/u;
  for (let n = 0; n < kRandomCases / 4; n++) {
    let text = "";
    const len = 1 + Math.floor(next() * 30);
    for (let i = 0; i < len; i++) {
      let cp;
      do {
        cp = next() < 0.8 ? Math.floor(next() * 0x10000) : Math.floor(next() * 0x110000);
      } while ((cp >= 0xd800 && cp < 0xe000) || unassigned.test(String.fromCodePoint(cp)));
      text += next() < 0.2 ? " " : String.fromCodePoint(cp);
    }
    cases.push({ name: `random code points ${n}`, bytes: Buffer.from(text, "utf8") });
  }
  return cases;
}

function readCorpus(path) {
  const raw = fs.readFileSync(path);
  const cases = [];
  let start = 0;
  let lineNo = 0;
  while (start <= raw.length) {
    let end = raw.indexOf(0x0a, start);
    if (end < 0) end = raw.length;
    const line = raw.subarray(start, end);
    lineNo++;
    start = end + 1;
    if (line.length === 0 || line[0] === 0x23 /* # */) continue;
    cases.push({ name: `line ${lineNo}`, bytes: unescape(line) });
  }
  cases.push({ name: "empty text", bytes: Buffer.alloc(0) });
  cases.push({ name: "all lines joined", bytes: Buffer.concat(cases.flatMap((c) => [c.bytes, Buffer.from("\n")])) });
  return cases.concat(randomCases(cases));
}

async function main() {
  const [tokenizerPath, corpusPath, outPath] = process.argv.slice(2);
  if (!outPath) throw new Error("usage: node oracle.js TOKENIZER_JSON CORPUS OUT_JSON");
  const t = Tokenizer.fromFile(tokenizerPath);
  // ignoreBOM: keep a leading U+FEFF as text (TextDecoder drops it otherwise).
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  const out = [];
  for (const c of readCorpus(corpusPath)) {
    const text = decoder.decode(c.bytes);
    const plain = (await t.encode(text, null, { addSpecialTokens: false })).getIds();
    const special = (await t.encode(text, null, { addSpecialTokens: true })).getIds();
    const perToken = c.name === "all lines joined" ? [] : await Promise.all(plain.map((id) => t.decode([id], false)));
    out.push({
      name: c.name,
      input_hex: c.bytes.toString("hex"),
      ids: plain,
      ids_special: special,
      decoded: await t.decode(special, false),
      decoded_skip_special: await t.decode(special, true),
      token_decodes: perToken,
    });
  }
  fs.writeFileSync(outPath, JSON.stringify({ tokenizer: tokenizerPath, cases: out }));
}

main().catch((e) => {
  console.error(`oracle.js: ${e.stack || e}`);
  process.exit(1);
});
