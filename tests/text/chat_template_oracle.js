// The reference side of engine/text's chat-template parity test: Hugging Face's own Jinja
// renderer (@huggingface/jinja, installed by scripts/install-test-oracles.sh) renders a set of
// generated conversations with the chat template of a tokenizer_config.json, each with the
// generation prompt on and off; the results (or HF's error) are written as JSON for
// engine/text/chat_template_oracle_test.cc, which renders the same with ours.
//
// Usage: node chat_template_oracle.js TOKENIZER_CONFIG_JSON OUT_JSON [COUNT]
//        (NODE_PATH = the oracles' node_modules; COUNT conversations, default 60)
//
// The conversations are drawn with a fixed seed: an optional system prompt, 1-7 turns of
// user/assistant, contents from a pool of edge cases (empty, white space only or around the
// text, newlines, unicode of several scripts and astral emoji, quotes and backslashes, Jinja
// and JSON look-alikes, <think> blocks), and sometimes a tool call or a tool turn. Every dict
// is written with its keys in sorted order, as nlohmann::json hands them to the C++ side.
"use strict";
const fs = require("fs");
const { Template } = require("@huggingface/jinja");

const [configPath, outPath, countArg] = process.argv.slice(2);
const config = JSON.parse(fs.readFileSync(configPath, "utf8"));
const token = (t) => (t && typeof t === "object" ? t.content : t ?? "");
let source = config.chat_template;
if (Array.isArray(source)) source = source.find((e) => e.name === "default").template;

let seed = 20261203;
function rand() {  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];

const TEXTS = [
  "Hello!", "", " ", "\n", "  padded both sides  ", "\n\nleading newlines", "trailing newlines\n\n",
  "What is 2+2?", "Line one\nLine two\n\tTabbed line", "naïve café — “quotes” ‘single’",
  "日本語のテキストです。", "中文测试，标点。", "Ελληνικά και русский текст", "עברית ومرحبا",
  "emoji 🤖🚀 and 👩‍👩‍👧 family", "combining e\u0301 and \u00e9", "zero\u200bwidth and nbsp\u00a0here",
  "ideographic\u3000space", "\"double\" and 'single' and \\backslash\\", "{{ not a template }} {% nor this %}",
  "{\"json\": [1, 2, {\"k\": null}]}", "<|im_start|> and <s> look-alikes </s>", "a".repeat(300),
  "Sure. Here is code:\n```python\nprint('hi')\n```", "x", "\r\nwindows line\r\n",
];
const THINKING = [
  "<think>\nreasoning step\n</think>\n\nThe answer is 4.", "<think></think>Short.",
  "<think>\n多步推理\n</think>\n回答", "no think tags but </think> in the middle",
];

function conversation(i) {
  const messages = [];
  if (rand() < 0.5) messages.push({ content: pick(TEXTS.concat(["You are a helpful assistant."])), role: "system" });
  const turns = 1 + Math.floor(rand() * 7);
  const withTools = i % 5 === 4;
  for (let t = 0; t < turns; ++t) {
    if (t % 2 === 0) {
      messages.push({ content: pick(TEXTS), role: "user" });
    } else if (withTools && rand() < 0.5) {
      const args = { city: pick(["Paris", "東京", ""]), days: Math.floor(rand() * 5) };
      messages.push({
        content: "",
        role: "assistant",
        tool_calls: [{ function: { arguments: rand() < 0.5 ? args : JSON.stringify(args), name: "get_weather" }, type: "function" }],
      });
      messages.push({ content: pick(["{\"temp\": 21}", "sunny", ""]), role: "tool" });
    } else {
      messages.push({ content: rand() < 0.3 ? pick(THINKING) : pick(TEXTS), role: "assistant" });
    }
  }
  if (i % 13 === 12) messages.push({ content: null, role: "assistant" });  // HF refuses some
  return messages;
}

const count = Number(countArg ?? 60);
const template = new Template(source);
const cases = [];
for (let i = 0; i < count; ++i) {
  const messages = conversation(i);
  for (const add_generation_prompt of [false, true]) {
    const c = { messages, add_generation_prompt };
    try {
      c.output = template.render({ messages, bos_token: token(config.bos_token), eos_token: token(config.eos_token), add_generation_prompt });
    } catch (e) {
      c.error = String(e.message);
    }
    cases.push(c);
  }
}
fs.writeFileSync(outPath, JSON.stringify({ cases }));
