#include "client/data_commands.h"

#include <cstdlib>
#include <istream>
#include <ostream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/config_command.h"
#include "client/terminal_text.h"
#include "engine/data/prepare.h"
#include "engine/data/tokenizer_files.h"
#include "nlohmann/json.hpp"

namespace accel::client {
namespace {

using Json = nlohmann::json;

int Fail(const absl::Status& status, std::ostream& err) {
  err << "error: " << status.message() << "\n";
  const bool invalid = status.code() == absl::StatusCode::kInvalidArgument ||
                       status.code() == absl::StatusCode::kNotFound ||
                       status.code() == absl::StatusCode::kUnimplemented;
  return invalid ? kExitInvalid : kExitFailure;
}

// A line of stdin without its '\n' (and '\r' of a CRLF file).
bool ReadLine(std::istream& in, std::string* line) {
  if (!std::getline(in, *line)) return false;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

int Encode(const DataCommand& c, const text::Tokenizer& tok, std::istream& in, std::ostream& out,
           std::ostream& err) {
  std::string line;
  for (int64_t n = 1; ReadLine(in, &line); ++n) {
    absl::StatusOr<std::vector<int32_t>> ids = tok.Encode(line, c.add_special_tokens);
    if (!ids.ok()) return Fail(absl::Status(ids.status().code(), absl::StrCat("stdin:", n, ": ", ids.status().message())), err);
    out << Json(*ids).dump() << "\n";
  }
  return kExitOk;
}

int Decode(const DataCommand& c, const text::Tokenizer& tok, std::istream& in, std::ostream& out,
           std::ostream& err) {
  std::string line;
  for (int64_t n = 1; ReadLine(in, &line); ++n) {
    const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    std::vector<int32_t> ids;
    bool ok = j.is_array();
    for (size_t i = 0; ok && i < j.size(); ++i) {
      ok = j[i].is_number_integer() && j[i].get<int64_t>() >= 0 && j[i].get<int64_t>() <= INT32_MAX;
      if (ok) ids.push_back(j[i].get<int32_t>());
    }
    if (!ok) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
                      "stdin:", n, ": expected a JSON array of token ids (integers >= 0)")),
                  err);
    }
    out << Json(tok.Decode(ids, c.skip_special_tokens))
               .dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace)
        << "\n";
  }
  return kExitOk;
}

// "PATH" or "PATH:WEIGHT" (the suffix counts as a weight only when it is a number).
data::DataSource ParseSource(const std::string& arg) {
  const size_t colon = arg.rfind(':');
  double weight = 0;
  if (colon != std::string::npos && absl::SimpleAtod(arg.substr(colon + 1), &weight)) {
    return {arg.substr(0, colon), weight};
  }
  return {arg, 1.0};
}

void ShowProgress(const data::PrepareProgress& p, std::ostream& err) {
  const double mb = 1e6;
  const int percent =
      p.bytes_total > 0 ? static_cast<int>(100 * p.bytes_done / p.bytes_total) : 100;
  const int filled = percent / 5;
  Unfiltered(err) << "\r";
  err << absl::StrFormat("preparing [%s%s] %3d%%  %.1f/%.1f MB  %d documents",
                         std::string(filled, '#'), std::string(20 - filled, '.'), percent,
                         p.bytes_done / mb, p.bytes_total / mb, p.documents);
}

int Prepare(const DataCommand& c, std::ostream& out, std::ostream& err, Env* fs) {
  data::PrepareOptions o;
  for (const std::string& s : c.sources) o.sources.push_back(ParseSource(s));
  o.tokenizer = c.tokenizer;
  if (c.format.empty()) {
    absl::StatusOr<std::vector<std::string>> first = data::ExpandSource(fs, o.sources[0].path);
    if (!first.ok()) return Fail(first.status(), err);
    absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = fs->NewRandomAccessFile(first->front());
    if (!file.ok()) return Fail(file.status(), err);
    std::string head(std::min<uint64_t>(4, (*file)->Size()), '\0');
    if (absl::Status s = (*file)->Read(0, head.size(), head.data()); !s.ok()) return Fail(s, err);
    o.format = data::DetectDatasetFormat(first->front(), head);
  } else {
    absl::StatusOr<data::DatasetFormat> format = data::ParseDatasetFormat(c.format);
    if (!format.ok()) return Fail(format.status(), err);
    o.format = *format;
  }
  o.text_field = c.text_field;
  o.validation_files = c.validation;
  o.validation_fraction = c.validation_fraction;
  o.skip_invalid = c.skip_invalid;
  o.seed = c.seed;
  o.cache_dir = c.cache_dir.empty() ? DefaultDatasetCacheDir() : c.cache_dir;
  o.threads = c.threads > 0 ? c.threads
                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const bool text = c.output != "json";
  bool shown = false;
  data::ProgressFn progress;
  if (text) {
    progress = [&](const data::PrepareProgress& p) {
      ShowProgress(p, err);
      shown = true;
    };
  }
  absl::StatusOr<data::PrepareResult> r = data::PrepareDataset(fs, o, progress);
  if (shown) err << "\n";
  if (!r.ok()) return Fail(r.status(), err);
  if (!text) {
    Json j = {{"dir", r->dir},
              {"train", r->train_path},
              {"cache_hit", r->cache_hit},
              {"key", r->key},
              {"train_documents", r->train_documents},
              {"train_tokens", r->train_tokens},
              {"skipped_records", r->skipped_records},
              {"vocab_size", r->vocab_size}};
    if (!r->validation_path.empty()) {
      j["validation"] = r->validation_path;
      j["validation_documents"] = r->validation_documents;
      j["validation_tokens"] = r->validation_tokens;
    }
    out << j.dump(2) << "\n";
    return kExitOk;
  }
  out << (r->cache_hit ? "cached: " : "prepared: ") << r->dir << "\n"
      << "train: " << r->train_path << " (" << r->train_documents << " documents, "
      << r->train_tokens << " tokens)\n";
  if (!r->validation_path.empty()) {
    out << "validation: " << r->validation_path << " (" << r->validation_documents
        << " documents, " << r->validation_tokens << " tokens)\n";
  }
  if (r->skipped_records > 0) out << "skipped: " << r->skipped_records << " invalid records\n";
  return kExitOk;
}

}  // namespace

std::string DefaultDatasetCacheDir() { return data::DefaultCacheDir(); }

void AddDataCommands(CLI::App& app, DataCommand* c) {
  CLI::App* data = app.add_subcommand("data", "tokenise text and prepare datasets");
  data->require_subcommand(1);
  c->data = data;
  auto tokenizer = [c](CLI::App* sub) {
    sub->add_option("--tokenizer", c->tokenizer, "tokenizer.json or the folder holding it")
        ->required();
  };
  CLI::App* encode = data->add_subcommand(
      "encode", "stdin: one document per line → stdout: one JSON array of ids per line");
  tokenizer(encode);
  encode->add_flag("--add-special-tokens", c->add_special_tokens,
                   "add what the post-processor adds (BOS/EOS), as Hugging Face's encode does");
  encode->callback([c] { c->chosen = "encode"; });

  CLI::App* decode = data->add_subcommand(
      "decode", "stdin: one JSON array of ids per line → stdout: one JSON string per line");
  tokenizer(decode);
  decode->add_flag("--skip-special-tokens", c->skip_special_tokens, "leave special tokens out");
  decode->callback([c] { c->chosen = "decode"; });

  CLI::App* prepare = data->add_subcommand(
      "prepare", "tokenise datasets into the prepared-dataset cache (train.bin, manifest.json)");
  prepare->add_option("sources", c->sources, "files or globs, each optionally PATH:WEIGHT")
      ->required();
  tokenizer(prepare);
  prepare->add_option("--format", c->format,
                      "text | jsonl | prompt_completion | messages (default: tokens for a shard, "
                      "jsonl for *.jsonl / *.json, else text)");
  prepare->add_option("--text-field", c->text_field, "the text field of jsonl records")
      ->capture_default_str();
  prepare->add_option("--validation", c->validation, "held-out files or globs (same format)");
  prepare->add_option("--validation-fraction", c->validation_fraction,
                      "share of documents held out, drawn per document");
  prepare->add_flag("--skip-invalid", c->skip_invalid, "skip bad records and count them");
  prepare->add_option("--seed", c->seed, "seed of the mixture's draws")->capture_default_str();
  prepare->add_option("--cache-dir", c->cache_dir, "default $ACCEL_DATA_CACHE or ~/.cache/accel/datasets");
  prepare->add_option("--threads", c->threads, "tokeniser threads (default: every core)");
  prepare->add_option("--output", c->output, "text | json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  prepare->callback([c] { c->chosen = "prepare"; });
}

int RunParsedDataCommand(const DataCommand& c, std::istream& in, std::ostream& out,
                         std::ostream& err, Env* fs) {
  if (c.chosen == "prepare") return Prepare(c, out, err, fs);
  absl::StatusOr<data::TokenizerFiles> tok = data::LoadTokenizerFiles(fs, c.tokenizer);
  if (!tok.ok()) return Fail(tok.status(), err);
  if (c.chosen == "encode") return Encode(c, *tok->tokenizer, in, out, err);
  if (c.chosen == "decode") return Decode(c, *tok->tokenizer, in, out, err);
  err << "error: no data command\n";
  return kExitInvalid;
}

}  // namespace accel::client
