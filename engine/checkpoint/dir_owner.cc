#include "engine/checkpoint/dir_owner.h"

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/base/status_macros.h"
#include "engine/checkpoint/crc32c.h"
#include "nlohmann/json.hpp"

namespace accel::checkpoint {
namespace {

using Json = nlohmann::ordered_json;

std::string Checksum(const Json& without_checksum) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", crc32c::Value(without_checksum.dump()));
  return absl::StrCat("crc32c:", buf);
}

}  // namespace

std::string NormalDirName(std::string_view dir) {
  std::string out = std::filesystem::path(dir).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string DescribeOwner(const CheckpointOwner& owner) {
  if (owner.anonymous()) return "an anonymous writer";
  return absl::StrCat("job ", owner.job.empty() ? "?" : owner.job, " (",
                      owner.daemon.empty() ? "?" : owner.daemon, ")");
}

std::string OwnerToJson(const CheckpointOwner& owner) {
  Json root;
  root["format"] = kOwnerFormatName;
  root["format_version"] = kOwnerFormatVersion;
  root["job"] = owner.job;
  root["daemon"] = owner.daemon;
  root["checksum"] = Checksum(root);
  return root.dump() + "\n";
}

absl::StatusOr<CheckpointOwner> OwnerFromJson(std::string_view text, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(path, ": ", what));
  };
  Json root = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) return bad("not a JSON object (a checkpoint directory's owner file)");
  auto string_field = [&](const char* key) -> absl::StatusOr<std::string> {
    auto it = root.find(key);
    if (it == root.end() || !it->is_string()) {
      return bad(absl::StrCat("field \"", key, "\" is missing or not a string"));
    }
    return it->get<std::string>();
  };
  ACCEL_ASSIGN_OR_RETURN(std::string format, string_field("format"));
  if (format != kOwnerFormatName) {
    return bad(absl::StrCat("format is \"", format, "\", expected \"", kOwnerFormatName, "\""));
  }
  auto version = root.find("format_version");
  if (version == root.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kOwnerFormatVersion) {
    return bad(absl::StrCat("format_version is not ", kOwnerFormatVersion));
  }
  ACCEL_ASSIGN_OR_RETURN(std::string checksum, string_field("checksum"));
  root.erase("checksum");
  if (checksum != Checksum(root)) {
    return bad(absl::StrCat("checksum mismatch: the file says ", checksum, ", its content has ",
                            Checksum(root)));
  }
  CheckpointOwner owner;
  ACCEL_ASSIGN_OR_RETURN(owner.job, string_field("job"));
  ACCEL_ASSIGN_OR_RETURN(owner.daemon, string_field("daemon"));
  return owner;
}

absl::StatusOr<std::optional<CheckpointOwner>> ReadOwner(Env* env, const std::string& dir) {
  const std::string path = JoinPath(dir, kOwnerFileName);
  if (!env->FileExists(path)) return std::nullopt;
  ACCEL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(env, path));
  ACCEL_ASSIGN_OR_RETURN(CheckpointOwner owner, OwnerFromJson(text, path));
  return owner;
}

absl::Status CheckOwner(Env* env, const std::string& dir, const CheckpointOwner& owner) {
  ACCEL_ASSIGN_OR_RETURN(std::optional<CheckpointOwner> have, ReadOwner(env, dir));
  if (!have.has_value() || *have == owner) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpoint.dir ", dir, " belongs to ", DescribeOwner(*have), " (", kOwnerFileName,
      "); this is ", DescribeOwner(owner), ": give another directory, or remove ", dir,
      " if its checkpoints are no longer needed"));
}

absl::Status ClaimDir(Env* env, const std::string& dir, const CheckpointOwner& owner) {
  ACCEL_ASSIGN_OR_RETURN(std::optional<CheckpointOwner> have, ReadOwner(env, dir));
  if (have.has_value()) return CheckOwner(env, dir, owner);
  absl::Status created = env->CreateDirs(dir);
  if (!created.ok() && !env->FileExists(dir)) return created;
  const std::string text = OwnerToJson(owner);
  const std::string path = JoinPath(dir, kOwnerFileName);
  // Unique to the owner, so two claimers never write into one temporary file.
  char tag[16];
  std::snprintf(tag, sizeof(tag), "%08x", crc32c::Value(text));
  const std::string tmp = absl::StrCat(path, ".", tag, ".tmp");
  {
    ACCEL_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(tmp));
    ACCEL_RETURN_IF_ERROR(file->Append(text));
    ACCEL_RETURN_IF_ERROR(file->Sync());
    ACCEL_RETURN_IF_ERROR(file->Close());
  }
  ACCEL_RETURN_IF_ERROR(env->RenameFile(tmp, path));
  ACCEL_RETURN_IF_ERROR(env->SyncDir(dir));
  return CheckOwner(env, dir, owner);
}

}  // namespace accel::checkpoint
