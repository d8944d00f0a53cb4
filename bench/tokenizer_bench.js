// HF's side of bench/tokenizer_bench.cc: Hugging Face tokenizers' Rust core through
// @anush008/tokenizers encodes every line of FILES, single-threaded: encodeBatch over batches
// of 1000 lines with RAYON_NUM_THREADS=1 (set by the caller; the batch call keeps Node's
// per-call promise overhead out of the figure). Prints one JSON line {seconds, bytes, tokens}
// with the best of REPEAT passes.
// Usage: node tokenizer_bench.js TOKENIZER_JSON REPEAT FILE...   (NODE_PATH = oracles' node_modules)
"use strict";
const fs = require("fs");
const { Tokenizer } = require("@anush008/tokenizers");

(async () => {
  const [path, repeat, ...files] = process.argv.slice(2);
  const tokenizer = Tokenizer.fromFile(path);
  const lines = [];
  let bytes = 0;
  for (const f of files) {
    for (const line of fs.readFileSync(f, "utf8").split("\n")) {
      if (line.length === 0) continue;
      lines.push(line);
      bytes += Buffer.byteLength(line, "utf8");
    }
  }
  let best = Infinity, tokens = 0;
  for (let r = 0; r < Number(repeat); ++r) {
    const start = process.hrtime.bigint();
    let n = 0;
    for (let i = 0; i < lines.length; i += 1000) {
      const encodings = await tokenizer.encodeBatch(lines.slice(i, i + 1000), { addSpecialTokens: false });
      for (const e of encodings) n += e.getIds().length;
    }
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
    tokens = n;
  }
  console.log(JSON.stringify({ seconds: best, bytes, tokens }));
})();
