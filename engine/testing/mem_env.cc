#include "engine/testing/mem_env.h"

#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "engine/base/status_macros.h"

namespace accel::testing {
namespace {

// A file or a directory; like an inode, it can be reachable under several names (only after a
// power loss brings back an old name of a renamed file) or under none (deleted, still open).
struct Node {
  explicit Node(bool dir) : is_dir(dir) {}
  const bool is_dir;
  // File: data[0, synced) survives a power loss.
  std::string data;
  size_t synced = 0;
  // Directory: the entries as the running process sees them, and as they are on disk.
  std::map<std::string, std::shared_ptr<Node>> live;
  std::map<std::string, std::shared_ptr<Node>> durable;
};

using NodePtr = std::shared_ptr<Node>;

absl::Status NoEntry(std::string_view what, const std::string& path) {
  return absl::NotFoundError(
      absl::StrCat(std::string(what), " ", path, ": No such file or directory"));
}
absl::Status NotADir(std::string_view what, const std::string& path) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(what), " ", path, ": Not a directory"));
}
absl::Status IsADir(std::string_view what, const std::string& path) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(what), " ", path, ": Is a directory"));
}

absl::StatusOr<std::vector<std::string>> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      return absl::InvalidArgumentError(absl::StrCat("MemEnv does not support '..': ", path));
    }
    parts.emplace_back(part);
  }
  return parts;
}

// The directory reached through the first `depth` components of `parts`.
absl::StatusOr<NodePtr> WalkDirs(const NodePtr& root, const std::vector<std::string>& parts,
                                 size_t depth, std::string_view what, const std::string& path) {
  NodePtr node = root;
  for (size_t i = 0; i < depth; ++i) {
    auto it = node->live.find(parts[i]);
    if (it == node->live.end()) return NoEntry(what, path);
    if (!it->second->is_dir) return NotADir(what, path);
    node = it->second;
  }
  return node;
}

// The node a path names, or NotFound / InvalidArgument.
absl::StatusOr<NodePtr> Lookup(const NodePtr& root, const std::string& path,
                               std::string_view what) {
  ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(path));
  if (parts.empty()) return root;
  ACCEL_ASSIGN_OR_RETURN(NodePtr dir, WalkDirs(root, parts, parts.size() - 1, what, path));
  auto it = dir->live.find(parts.back());
  if (it == dir->live.end()) return NoEntry(what, path);
  return it->second;
}

struct ParentAndName {
  NodePtr dir;
  std::string name;
};

// The directory that holds `path` and the last component; the root has no parent.
absl::StatusOr<ParentAndName> LookupParent(const NodePtr& root, const std::string& path,
                                           std::string_view what) {
  ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(path));
  if (parts.empty()) return IsADir(what, path);
  ACCEL_ASSIGN_OR_RETURN(NodePtr dir, WalkDirs(root, parts, parts.size() - 1, what, path));
  return ParentAndName{std::move(dir), parts.back()};
}

// Power loss: every directory reachable on disk gets its on-disk entries back and every file
// loses its unsynced tail. A directory reached twice (an old and a new name of a renamed
// directory, both on disk) keeps only its first name, so the tree stays a tree.
void RestoreDurable(Node* dir, std::set<Node*>& visited) {
  dir->live = dir->durable;
  for (auto it = dir->live.begin(); it != dir->live.end();) {
    Node* child = it->second.get();
    if (!child->is_dir) {
      child->data.resize(child->synced);
      ++it;
    } else if (!visited.insert(child).second) {
      dir->durable.erase(it->first);
      it = dir->live.erase(it);
    } else {
      RestoreDurable(child, visited);
      ++it;
    }
  }
}

void MakeDurable(Node* dir) {
  dir->durable = dir->live;
  for (auto& [name, child] : dir->live) {
    if (child->is_dir) {
      MakeDurable(child.get());
    } else {
      child->synced = child->data.size();
    }
  }
}

void Describe(const Node* dir, const std::string& prefix, std::string* out) {
  for (const auto& [name, child] : dir->live) {
    std::string path = absl::StrCat(prefix, "/", name);
    if (child->is_dir) {
      absl::StrAppend(out, path, "/\n");
      Describe(child.get(), path, out);
    } else {
      absl::StrAppend(out, path, " (", child->data.size(), " bytes, ", child->synced, " synced)\n");
    }
  }
}

}  // namespace

struct MemEnv::Fs {
  absl::Mutex mu;
  NodePtr root ABSL_GUARDED_BY(mu) = std::make_shared<Node>(/*dir=*/true);
  // Bumped by every power loss; a WritableFile from an older generation is dead.
  uint64_t generation ABSL_GUARDED_BY(mu) = 0;
};

namespace {

class MemWritableFile final : public WritableFile {
 public:
  MemWritableFile(std::shared_ptr<MemEnv::Fs> fs, NodePtr node, std::string path,
                  uint64_t generation)
      : fs_(std::move(fs)),
        node_(std::move(node)),
        path_(std::move(path)),
        generation_(generation) {}

  absl::Status Append(std::string_view data) override {
    absl::MutexLock lock(&fs_->mu);
    ACCEL_RETURN_IF_ERROR(CheckUsable("write"));
    node_->data.append(data.data(), data.size());
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    absl::MutexLock lock(&fs_->mu);
    ACCEL_RETURN_IF_ERROR(CheckUsable("fdatasync"));
    node_->synced = node_->data.size();
    return absl::OkStatus();
  }
  absl::Status Close() override {
    absl::MutexLock lock(&fs_->mu);
    if (closed_) return absl::OkStatus();
    ACCEL_RETURN_IF_ERROR(CheckUsable("close"));
    closed_ = true;
    return absl::OkStatus();
  }

 private:
  absl::Status CheckUsable(std::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(fs_->mu) {
    if (closed_) {
      return absl::FailedPreconditionError(
          absl::StrCat(std::string(what), " ", path_, ": file is closed"));
    }
    if (generation_ != fs_->generation) {
      return absl::FailedPreconditionError(absl::StrCat(
          std::string(what), " ", path_, ": file was opened before a simulated power loss"));
    }
    return absl::OkStatus();
  }

  std::shared_ptr<MemEnv::Fs> fs_;
  NodePtr node_;
  std::string path_;
  uint64_t generation_;
  bool closed_ = false;
};

class MemRandomAccessFile final : public RandomAccessFile {
 public:
  MemRandomAccessFile(std::shared_ptr<MemEnv::Fs> fs, NodePtr node, std::string path, uint64_t size)
      : fs_(std::move(fs)), node_(std::move(node)), path_(std::move(path)), size_(size) {}

  absl::Status Read(uint64_t offset, size_t n, char* dst) const override {
    if (offset > size_ || n > size_ - offset) {
      return absl::DataLossError(absl::StrCat(path_, ": read of ", n, " bytes at offset ", offset,
                                              " runs past the end of the file (", size_,
                                              " bytes)"));
    }
    absl::MutexLock lock(&fs_->mu);
    // The file may have been truncated since it was opened.
    const std::string& data = node_->data;
    if (offset + n > data.size()) {
      return absl::DataLossError(
          absl::StrCat(path_, ": unexpected end of file at offset ", data.size()));
    }
    if (n > 0) std::memcpy(dst, data.data() + offset, n);
    return absl::OkStatus();
  }
  uint64_t Size() const override { return size_; }
  const std::string& Path() const override { return path_; }

 private:
  std::shared_ptr<MemEnv::Fs> fs_;
  NodePtr node_;
  std::string path_;
  uint64_t size_;
};

}  // namespace

MemEnv::MemEnv(FakeClock* clock) : fs_(std::make_shared<Fs>()) {
  if (clock == nullptr) {
    owned_clock_ = std::make_unique<FakeClock>();
    clock = owned_clock_.get();
  }
  clock_ = clock;
}

MemEnv::~MemEnv() = default;

absl::StatusOr<std::unique_ptr<WritableFile>> MemEnv::NewWritableFile(const std::string& path) {
  absl::MutexLock lock(&fs_->mu);
  ACCEL_ASSIGN_OR_RETURN(ParentAndName loc, LookupParent(fs_->root, path, "open for writing"));
  NodePtr& slot = loc.dir->live[loc.name];
  if (slot == nullptr) {
    slot = std::make_shared<Node>(/*dir=*/false);
  } else if (slot->is_dir) {
    return IsADir("open for writing", path);
  } else {
    slot->data.clear();
    slot->synced = 0;
  }
  return std::unique_ptr<WritableFile>(
      std::make_unique<MemWritableFile>(fs_, slot, path, fs_->generation));
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> MemEnv::NewRandomAccessFile(
    const std::string& path) {
  absl::MutexLock lock(&fs_->mu);
  ACCEL_ASSIGN_OR_RETURN(NodePtr node, Lookup(fs_->root, path, "open"));
  if (node->is_dir) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is a directory, not a file"));
  }
  uint64_t size = node->data.size();
  return std::unique_ptr<RandomAccessFile>(
      std::make_unique<MemRandomAccessFile>(fs_, std::move(node), path, size));
}

bool MemEnv::FileExists(const std::string& path) {
  absl::MutexLock lock(&fs_->mu);
  return Lookup(fs_->root, path, "stat").ok();
}

absl::StatusOr<uint64_t> MemEnv::GetFileSize(const std::string& path) {
  absl::MutexLock lock(&fs_->mu);
  ACCEL_ASSIGN_OR_RETURN(NodePtr node, Lookup(fs_->root, path, "stat"));
  if (node->is_dir) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is a directory, not a file"));
  }
  return static_cast<uint64_t>(node->data.size());
}

absl::Status MemEnv::CreateDirs(const std::string& path) {
  absl::MutexLock lock(&fs_->mu);
  ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(path));
  NodePtr node = fs_->root;
  for (const std::string& part : parts) {
    NodePtr& slot = node->live[part];
    if (slot == nullptr) slot = std::make_shared<Node>(/*dir=*/true);
    if (!slot->is_dir) return NotADir("create directory", path);
    node = slot;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> MemEnv::ListDir(const std::string& path) {
  absl::MutexLock lock(&fs_->mu);
  ACCEL_ASSIGN_OR_RETURN(NodePtr node, Lookup(fs_->root, path, "list directory"));
  if (!node->is_dir) return NotADir("list directory", path);
  std::vector<std::string> names;
  names.reserve(node->live.size());
  for (const auto& entry : node->live) names.push_back(entry.first);
  return names;
}

absl::Status MemEnv::DeleteFile(const std::string& path) {
  absl::MutexLock lock(&fs_->mu);
  ACCEL_ASSIGN_OR_RETURN(ParentAndName loc, LookupParent(fs_->root, path, "delete"));
  auto it = loc.dir->live.find(loc.name);
  if (it == loc.dir->live.end()) return NoEntry("delete", path);
  if (it->second->is_dir) return IsADir("delete", path);
  loc.dir->live.erase(it);
  return absl::OkStatus();
}

absl::Status MemEnv::DeleteRecursively(const std::string& path) {
  absl::MutexLock lock(&fs_->mu);
  ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(path));
  if (parts.empty()) {
    fs_->root->live.clear();
    return absl::OkStatus();
  }
  absl::StatusOr<NodePtr> dir = WalkDirs(fs_->root, parts, parts.size() - 1, "delete", path);
  if (absl::IsNotFound(dir.status())) return absl::OkStatus();
  if (!dir.ok()) return dir.status();
  (*dir)->live.erase(parts.back());
  return absl::OkStatus();
}

absl::Status MemEnv::RenameFile(const std::string& from, const std::string& to) {
  const std::string what = absl::StrCat("rename to ", to, " from");
  absl::MutexLock lock(&fs_->mu);
  ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> from_parts, SplitPath(from));
  ACCEL_ASSIGN_OR_RETURN(std::vector<std::string> to_parts, SplitPath(to));
  ACCEL_ASSIGN_OR_RETURN(ParentAndName src, LookupParent(fs_->root, from, what));
  auto src_it = src.dir->live.find(src.name);
  if (src_it == src.dir->live.end()) return NoEntry(what, from);
  NodePtr node = src_it->second;
  ACCEL_ASSIGN_OR_RETURN(ParentAndName dst, LookupParent(fs_->root, to, what));
  if (node->is_dir && to_parts.size() > from_parts.size() &&
      std::equal(from_parts.begin(), from_parts.end(), to_parts.begin())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", from, ": cannot move a directory into itself"));
  }
  auto dst_it = dst.dir->live.find(dst.name);
  if (dst_it != dst.dir->live.end()) {
    const NodePtr& target = dst_it->second;
    if (target == node) return absl::OkStatus();  // same file: POSIX does nothing
    if (!node->is_dir && target->is_dir) return IsADir(what, from);
    if (node->is_dir && !target->is_dir) return NotADir(what, from);
    if (target->is_dir && !target->live.empty()) {
      return absl::InternalError(absl::StrCat(what, " ", from, ": Directory not empty"));
    }
  }
  dst.dir->live[dst.name] = node;
  src.dir->live.erase(src.name);
  return absl::OkStatus();
}

absl::Status MemEnv::SyncDir(const std::string& path) {
  absl::MutexLock lock(&fs_->mu);
  ACCEL_ASSIGN_OR_RETURN(NodePtr node, Lookup(fs_->root, path, "open directory"));
  if (!node->is_dir) return NotADir("open directory", path);
  node->durable = node->live;
  return absl::OkStatus();
}

int64_t MemEnv::NowMicros() { return clock_->NowMicros(); }
void MemEnv::SleepForMicros(int64_t micros) { clock_->SleepForMicros(micros); }

void MemEnv::SimulatePowerLoss() {
  absl::MutexLock lock(&fs_->mu);
  ++fs_->generation;
  std::set<Node*> visited = {fs_->root.get()};
  RestoreDurable(fs_->root.get(), visited);
}

void MemEnv::SyncAll() {
  absl::MutexLock lock(&fs_->mu);
  MakeDurable(fs_->root.get());
}

std::string MemEnv::DebugString() {
  absl::MutexLock lock(&fs_->mu);
  std::string out;
  Describe(fs_->root.get(), "", &out);
  return out;
}

}  // namespace accel::testing
