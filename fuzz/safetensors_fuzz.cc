// Fuzz target: the safetensors reader (engine/checkpoint/safetensors.h) on arbitrary file bytes.
// Properties: Open and every read either succeed or return DataLoss / InvalidArgument naming the
// file; an opened file's tensors lie inside the data block without overlapping; and a file whose
// tensors all have engine dtypes, written back by SafetensorsWriter and re-read, gives the same
// names, dtypes, shapes, bytes and metadata.
#include <cstring>
#include <string>
#include <vector>

#include "engine/checkpoint/safetensors.h"
#include "engine/testing/mem_env.h"
#include "fuzz/fuzz_check.h"

namespace accel::fuzz {
namespace {

using checkpoint::SafetensorsReader;
using checkpoint::SafetensorsWriter;
using checkpoint::TensorInfo;

constexpr char kPath[] = "/in.safetensors";
constexpr char kOut[] = "/out.safetensors";

void CheckLayout(const SafetensorsReader& r, uint64_t file_size) {
  uint64_t furthest = r.data_begin();
  FUZZ_CHECK(r.data_begin() >= 8 && r.data_begin() <= file_size, "data block outside the file");
  for (const TensorInfo& t : r.tensors()) {
    FUZZ_CHECK(t.offset >= r.data_begin() && t.nbytes <= file_size &&
                   t.offset <= file_size - t.nbytes,
               "tensor " + t.name + " outside the data block");
    FUZZ_CHECK(t.nbytes == static_cast<uint64_t>(t.numel) * t.item_size, "nbytes != numel * size");
    if (t.nbytes > 0) {
      FUZZ_CHECK(t.offset >= furthest, "tensor " + t.name + " overlaps an earlier one");
      furthest = t.offset + t.nbytes;
    }
    FUZZ_CHECK(r.Find(t.name) == &t, "Find does not return tensor " + t.name);
  }
}

// Reads every tensor raw (and as float where the dtype allows); returns the raw bytes.
std::vector<std::string> ReadAll(const SafetensorsReader& r) {
  std::vector<std::string> raw;
  for (const TensorInfo& t : r.tensors()) {
    std::string bytes(t.nbytes, '\0');
    absl::Status s = r.ReadRaw(t.name, bytes.data(), bytes.size());
    FUZZ_CHECK(s.ok(), "ReadRaw of an in-bounds tensor failed: " + s.ToString());
    raw.push_back(std::move(bytes));
    std::vector<float> f(static_cast<size_t>(t.numel));
    s = r.ReadFloat(t.name, f.data(), t.numel);
    FUZZ_CHECK(s.ok() == t.dtype.has_value(), "ReadFloat: " + s.ToString());
    if (!s.ok()) CheckError(s, {absl::StatusCode::kInvalidArgument}, kPath);
    if (t.dtype.has_value() && t.numel > 1) {
      s = r.ReadRange(t.name, 1, t.numel - 1, f.data());
      FUZZ_CHECK(s.ok(), "ReadRange: " + s.ToString());
    }
    s = r.ExpectShape(t.name, t.shape);
    FUZZ_CHECK(s.ok(), "ExpectShape of its own shape: " + s.ToString());
  }
  return raw;
}

void RoundTrip(const SafetensorsReader& r, const std::vector<std::string>& raw, Env* env) {
  SafetensorsWriter w;
  for (size_t i = 0; i < r.tensors().size(); ++i) {
    const TensorInfo& t = r.tensors()[i];
    // The writer only stores the engine's dtypes, and refuses an empty name (which the format
    // allows): such files are read-only for us.
    if (!t.dtype.has_value() || t.name.empty()) return;
    absl::Status s = w.Add(t.name, *t.dtype, t.shape, raw[i].data());
    FUZZ_CHECK(s.ok(), "writer refuses a tensor the reader accepted: " + s.ToString());
  }
  for (const auto& [k, v] : r.metadata()) w.SetMetadata(k, v);
  absl::Status s = w.Write(env, kOut);
  FUZZ_CHECK(s.ok(), "writing back: " + s.ToString());
  auto again = SafetensorsReader::Open(env, kOut);
  FUZZ_CHECK(again.ok(), "re-reading what the writer wrote: " + again.status().ToString());
  FUZZ_CHECK((*again)->metadata() == r.metadata(), "metadata differs after a round trip");
  FUZZ_CHECK((*again)->tensors().size() == r.tensors().size(), "tensor count differs");
  for (size_t i = 0; i < r.tensors().size(); ++i) {
    const TensorInfo& a = r.tensors()[i];
    const TensorInfo* b = (*again)->Find(a.name);
    FUZZ_CHECK(b != nullptr, "tensor " + a.name + " lost in the round trip");
    FUZZ_CHECK(b->dtype_name == a.dtype_name && b->shape == a.shape, "tensor " + a.name +
                                                                         " changed dtype/shape");
    std::string bytes(b->nbytes, '\0');
    FUZZ_CHECK((*again)->ReadRaw(a.name, bytes.data(), bytes.size()).ok(), "re-read");
    FUZZ_CHECK(bytes == raw[i], "tensor " + a.name + " bytes changed in the round trip");
  }
}

}  // namespace
}  // namespace accel::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accel::fuzz;
  accel::testing::MemEnv env;
  PutFile(&env, kPath, AsText(data, size));
  auto reader = accel::checkpoint::SafetensorsReader::Open(&env, kPath);
  if (!reader.ok()) {
    CheckError(reader.status(), {absl::StatusCode::kDataLoss, absl::StatusCode::kInvalidArgument},
               kPath);
    return 0;
  }
  CheckLayout(**reader, size);
  const std::vector<std::string> raw = ReadAll(**reader);
  RoundTrip(**reader, raw, &env);
  return 0;
}
