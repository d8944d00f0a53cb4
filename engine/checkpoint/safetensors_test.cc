#include "engine/checkpoint/safetensors.h"

#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/testing/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accel::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = JoinPath(::testing::TempDir(),
                    absl::StrCat("safetensors_test_", ::getpid(), "_", info->name()));
    ASSERT_TRUE(env_->CreateDirs(dir_).ok());
  }
  void TearDown() override { env_->DeleteRecursively(dir_).IgnoreError(); }

  std::string Path(std::string_view name) { return JoinPath(dir_, name); }

  // Writes raw bytes as a file, for hand-made (possibly malformed) inputs.
  std::string WriteBytes(std::string_view name, const std::string& bytes) {
    std::string path = Path(name);
    EXPECT_TRUE(WriteFileAtomic(env_, path, bytes).ok());
    return path;
  }

  // 8-byte little-endian header length + header + data, the way the spec lays it out.
  static std::string Assemble(const std::string& header, const std::string& data) {
    std::string out;
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    return out + header + data;
  }

  // A file with one F32 tensor "t" described by `entry` and `data_bytes` zero bytes of data.
  std::string OneTensorFile(std::string_view name, const std::string& entry, size_t data_bytes) {
    return WriteBytes(name,
                      Assemble(absl::StrCat("{\"t\":", entry, "}"), std::string(data_bytes, '\0')));
  }

  absl::Status OpenStatus(const std::string& path) {
    return SafetensorsReader::Open(env_, path).status();
  }

  Env* env_ = Env::Default();
  std::string dir_;
};

template <typename T>
std::string LeBytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST_F(SafetensorsTest, RoundTripF32Bf16F16EmptyAndMetadata) {
  testing::TestRng rng(7);
  std::vector<float> w = rng.NormalVector(6);
  std::vector<float> b = rng.NormalVector(5);
  std::vector<float> h = rng.NormalVector(3);
  std::vector<uint16_t> h_bits(3);
  FloatToF16(h.data(), h_bits.data(), h.size());

  SafetensorsWriter writer;
  ASSERT_TRUE(writer.Add("w", DType::kF32, {2, 3}, w.data()).ok());
  ASSERT_TRUE(writer.AddConverted("b", {5}, b.data(), DType::kBF16).ok());
  ASSERT_TRUE(writer.Add("h", DType::kF16, {3, 1}, h_bits.data()).ok());
  ASSERT_TRUE(writer.Add("empty", DType::kF32, {0, 4}, nullptr).ok());
  ASSERT_TRUE(writer.AddConverted("scalar", {}, &w[0], DType::kF32).ok());
  writer.SetMetadata("format", "pt");
  writer.SetMetadata("step", "12");
  const std::string path = Path("model.safetensors");
  ASSERT_TRUE(writer.Write(env_, path).ok());
  EXPECT_FALSE(env_->FileExists(path + ".tmp"));

  auto reader_or = SafetensorsReader::Open(env_, path);
  ASSERT_TRUE(reader_or.ok()) << reader_or.status();
  const SafetensorsReader& r = **reader_or;
  EXPECT_EQ(r.data_begin() % 8, 0u);
  // Insertion order is file order; the empty tensor sits between h and scalar at equal offsets.
  EXPECT_THAT(r.names(), ElementsAre("w", "b", "h", "empty", "scalar"));
  EXPECT_EQ(r.metadata().at("format"), "pt");
  EXPECT_EQ(r.metadata().at("step"), "12");
  EXPECT_EQ(r.metadata().size(), 2u);

  const TensorInfo* wi = r.Find("w");
  ASSERT_NE(wi, nullptr);
  EXPECT_EQ(wi->dtype, DType::kF32);
  EXPECT_EQ(wi->dtype_name, "F32");
  EXPECT_THAT(wi->shape, ElementsAre(2, 3));
  EXPECT_EQ(wi->numel, 6);
  EXPECT_EQ(wi->nbytes, 24u);
  EXPECT_EQ(wi->offset, r.data_begin());
  EXPECT_EQ(r.Find("b")->dtype_name, "BF16");
  EXPECT_EQ(r.Find("b")->offset, r.data_begin() + 24);
  EXPECT_EQ(r.Find("h")->dtype, DType::kF16);
  EXPECT_EQ(r.Find("empty")->nbytes, 0u);
  EXPECT_TRUE(r.Find("scalar")->shape.empty());
  EXPECT_EQ(r.Find("nope"), nullptr);

  std::vector<float> got(6);
  ASSERT_TRUE(r.ReadFloat("w", got.data(), 6).ok());
  EXPECT_EQ(got, w);  // f32 is bit-exact
  got.assign(5, 0.f);
  ASSERT_TRUE(r.ReadFloat("b", got.data(), 5).ok());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i], Bf16ToFloat(FloatToBf16(b[i]))) << i;
  std::vector<uint16_t> raw(5);
  ASSERT_TRUE(r.ReadRaw("b", raw.data(), 10).ok());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(raw[i], FloatToBf16(b[i])) << i;
  got.assign(3, 0.f);
  ASSERT_TRUE(r.ReadFloat("h", got.data(), 3).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i], F16ToFloat(h_bits[i])) << i;
  ASSERT_TRUE(r.ReadFloat("empty", nullptr, 0).ok());
  float s = 0;
  ASSERT_TRUE(r.ReadFloat("scalar", &s, 1).ok());
  EXPECT_EQ(s, w[0]);
}

TEST_F(SafetensorsTest, WriterProducesSpecBytes) {
  // Header bytes exactly as the format defines them, padded to 8-byte alignment with spaces.
  const std::vector<float> x = {1.0f};
  SafetensorsWriter writer;
  ASSERT_TRUE(writer.Add("x", DType::kF32, {1}, x.data()).ok());
  writer.SetMetadata("k", "v");
  const std::string path = Path("x.safetensors");
  ASSERT_TRUE(writer.Write(env_, path).ok());
  auto bytes = ReadFileToString(env_, path);
  ASSERT_TRUE(bytes.ok());
  std::string json =
      R"({"__metadata__":{"k":"v"},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  json.append((8 - (8 + json.size()) % 8) % 8, ' ');
  EXPECT_EQ(*bytes, Assemble(json, LeBytes(x)));
}

TEST_F(SafetensorsTest, ReadsHandWrittenFile) {
  // Tensors listed out of order, an integer tensor, a scalar, metadata, space padding.
  std::string header = R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("c":{"dtype":"I64","shape":[1],"data_offsets":[10,18]},)"
                       R"("a":{"dtype":"BF16","shape":[],"data_offsets":[8,10]},)"
                       R"("__metadata__":{"format":"pt"}})";
  header.append(5, ' ');
  std::string data = LeBytes(std::vector<float>{1.5f, -2.0f}) +
                     LeBytes(std::vector<uint16_t>{0x3FC0}) +  // bf16 1.5
                     LeBytes(std::vector<int64_t>{42});
  const std::string path = WriteBytes("hand.safetensors", Assemble(header, data));

  auto reader_or = SafetensorsReader::Open(env_, path);
  ASSERT_TRUE(reader_or.ok()) << reader_or.status();
  const SafetensorsReader& r = **reader_or;
  EXPECT_EQ(r.data_begin(), 8 + header.size());
  EXPECT_THAT(r.names(), ElementsAre("b", "a", "c"));
  EXPECT_EQ(r.metadata().at("format"), "pt");
  std::vector<float> bv(2);
  ASSERT_TRUE(r.ReadFloat("b", bv.data(), 2).ok());
  EXPECT_THAT(bv, ElementsAre(1.5f, -2.0f));
  float a = 0;
  ASSERT_TRUE(r.ReadFloat("a", &a, 1).ok());
  EXPECT_EQ(a, 1.5f);

  const TensorInfo* c = r.Find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->dtype.has_value());
  EXPECT_EQ(c->item_size, 8u);
  int64_t cv = 0;
  ASSERT_TRUE(r.ReadRaw("c", &cv, 8).ok());
  EXPECT_EQ(cv, 42);
  float f;
  absl::Status s = r.ReadFloat("c", &f, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("I64"));
}

TEST_F(SafetensorsTest, ReadRangeAcrossConversionChunks) {
  // More than one conversion chunk (1 << 20 elements) so the chunked path is exercised.
  const int64_t n = (int64_t{1} << 20) + 37;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 251) - 125.f;  // exact in bf16
  SafetensorsWriter writer;
  ASSERT_TRUE(writer.AddConverted("pad", {3}, v.data(), DType::kF32).ok());
  ASSERT_TRUE(writer.AddConverted("v", {n}, v.data(), DType::kBF16).ok());
  const std::string path = Path("big.safetensors");
  ASSERT_TRUE(writer.Write(env_, path).ok());
  auto r = SafetensorsReader::Open(env_, path);
  ASSERT_TRUE(r.ok()) << r.status();

  std::vector<float> all(n);
  ASSERT_TRUE((*r)->ReadFloat("v", all.data(), n).ok());
  EXPECT_EQ(all, v);
  const int64_t begin = (int64_t{1} << 20) - 5, count = 30;
  std::vector<float> part(count);
  ASSERT_TRUE((*r)->ReadRange("v", begin, count, part.data()).ok());
  EXPECT_EQ(part, std::vector<float>(v.begin() + begin, v.begin() + begin + count));
  std::vector<float> pad(2);
  ASSERT_TRUE((*r)->ReadRange("pad", 1, 2, pad.data()).ok());
  EXPECT_THAT(pad, ElementsAre(v[1], v[2]));
  ASSERT_TRUE((*r)->ReadRange("pad", 3, 0, nullptr).ok());  // empty range at the end
}

TEST_F(SafetensorsTest, CallerErrors) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  SafetensorsWriter writer;
  ASSERT_TRUE(writer.Add("x", DType::kF32, {2, 3}, x.data()).ok());
  const std::string path = Path("x.safetensors");
  ASSERT_TRUE(writer.Write(env_, path).ok());
  auto r = SafetensorsReader::Open(env_, path);
  ASSERT_TRUE(r.ok());
  std::vector<float> buf(6);

  absl::Status s = (*r)->ReadFloat("missing", buf.data(), 6);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("\"missing\""));
  EXPECT_THAT(s.message(), HasSubstr(path));

  s = (*r)->ReadRange("x", 4, 3, buf.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("elements [4, 7) are out of range for tensor \"x\" with 6"));
  EXPECT_EQ((*r)->ReadRange("x", -1, 1, buf.data()).code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ((*r)->ReadFloat("x", buf.data(), 5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*r)->ReadRaw("x", buf.data(), 20).code(), absl::StatusCode::kInvalidArgument);

  EXPECT_TRUE((*r)->ExpectShape("x", std::vector<int64_t>{2, 3}).ok());
  s = (*r)->ExpectShape("x", std::vector<int64_t>{3, 2});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            absl::StrCat("tensor \"x\" has shape [2, 3] in ", path, ", expected [3, 2]"));
  EXPECT_EQ((*r)->ExpectShape("y", std::vector<int64_t>{}).code(), absl::StatusCode::kNotFound);
}

TEST_F(SafetensorsTest, WriterRejectsBadTensors) {
  float x = 1;
  SafetensorsWriter w;
  ASSERT_TRUE(w.Add("a", DType::kF32, {1}, &x).ok());
  EXPECT_EQ(w.Add("a", DType::kF32, {1}, &x).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.Add("__metadata__", DType::kF32, {1}, &x).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.Add("", DType::kF32, {1}, &x).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.Add("neg", DType::kF32, {2, -1}, &x).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.Add("null", DType::kF32, {2}, nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.size(), 1u);

  SafetensorsWriter bad_utf8;
  ASSERT_TRUE(bad_utf8.Add("\xff\xfe", DType::kF32, {1}, &x).ok());
  const std::string path = Path("bad.safetensors");
  EXPECT_EQ(bad_utf8.Write(env_, path).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(env_->FileExists(path));
  EXPECT_FALSE(env_->FileExists(path + ".tmp"));
}

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  EXPECT_EQ(OpenStatus(Path("absent.safetensors")).code(), absl::StatusCode::kNotFound);
}

TEST_F(SafetensorsTest, FileShorterThanEightBytes) {
  const std::string path = WriteBytes("short", std::string(5, '\0'));
  absl::Status s = OpenStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("5 bytes is too short"));
}

TEST_F(SafetensorsTest, HeaderLengthPastEof) {
  std::string bytes = Assemble("{}", "");
  bytes[0] = 100;  // claims a 100-byte header in a 10-byte file
  const std::string path = WriteBytes("past", bytes);
  absl::Status s = OpenStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("header length at offset 0 runs past the end"));
  // The length is the file's first 8 bytes, which are never printed (docs/rpc.md).
  EXPECT_THAT(s.message(), Not(HasSubstr("100")));

  bytes[0] = 0;
  bytes[7] = 0x10;  // 2^60: beyond the 100 MB limit
  s = OpenStatus(WriteBytes("huge", bytes));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("exceeds the limit"));
}

TEST_F(SafetensorsTest, InvalidJson) {
  const std::string path = WriteBytes("json", Assemble("{\"t\": [1,", ""));
  absl::Status s = OpenStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("invalid header JSON near file offset"));
  // Not the parser's excerpt of the text ("last read: '[1,'").
  EXPECT_THAT(s.message(), Not(HasSubstr("last read")));

  s = OpenStatus(WriteBytes("array", Assemble("[1, 2]  ", "")));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("not a JSON object"));

  s = OpenStatus(WriteBytes("meta", Assemble(R"({"__metadata__":{"k":1}})", "")));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("\"k\" is not a string"));

  // Found by fuzz/safetensors_fuzz.cc: a number beyond double threw out of Open.
  s = OpenStatus(WriteBytes("overflow", Assemble(R"({"__metadata__":{"k":1E400}})", "")));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("a number out of range"));
  EXPECT_THAT(s.message(), Not(HasSubstr("1E400")));  // the parser's message quoted it
}

TEST_F(SafetensorsTest, OffsetsOutOfRange) {
  const std::string path =
      OneTensorFile("range", R"({"dtype":"F32","shape":[4],"data_offsets":[8,24]})", 16);
  absl::Status s = OpenStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("tensor \"t\" has data_offsets [8, 24] outside the data "
                                     "block (16 bytes"));
  // begin > end
  s = OpenStatus(OneTensorFile("rev", R"({"dtype":"F32","shape":[0],"data_offsets":[8,4]})", 16));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
}

TEST_F(SafetensorsTest, SizeMismatchBetweenShapeAndOffsets) {
  const std::string path =
      OneTensorFile("size", R"({"dtype":"BF16","shape":[2,3],"data_offsets":[0,16]})", 16);
  absl::Status s = OpenStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("tensor \"t\" has shape [2, 3] of dtype BF16 (12 bytes) "
                                     "but data_offsets [0, 16] span 16 bytes"));
}

TEST_F(SafetensorsTest, OverlappingTensors) {
  std::string header = R"({"p":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                       R"("q":{"dtype":"F32","shape":[2],"data_offsets":[12,20]},)"
                       R"("z":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})";
  const std::string path = WriteBytes("overlap", Assemble(header, std::string(20, '\0')));
  absl::Status s = OpenStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("\"p\""));
  EXPECT_THAT(s.message(), HasSubstr("\"q\""));
  EXPECT_THAT(s.message(),
              HasSubstr("overlap at file offset " + std::to_string(8 + header.size() + 12)));
}

TEST_F(SafetensorsTest, UnknownDtypeAndBadShape) {
  const std::string path =
      OneTensorFile("dtype", R"({"dtype":"Q7","shape":[1],"data_offsets":[0,1]})", 1);
  absl::Status s = OpenStatus(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_THAT(s.message(), HasSubstr("tensor \"t\" has unknown dtype \"Q7\""));

  s = OpenStatus(OneTensorFile("neg", R"({"dtype":"F32","shape":[-1],"data_offsets":[0,0]})", 0));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("has a shape entry that is not a non-negative integer"));

  s = OpenStatus(OneTensorFile("noshape", R"({"dtype":"F32","data_offsets":[0,0]})", 0));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  s = OpenStatus(OneTensorFile("nooff", R"({"dtype":"F32","shape":[0]})", 0));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
}

TEST_F(SafetensorsTest, WriteReplacesExistingFile) {
  const std::string path = WriteBytes("m.safetensors", "old junk");
  float x = 3;
  SafetensorsWriter w;
  ASSERT_TRUE(w.Add("x", DType::kF32, {1}, &x).ok());
  ASSERT_TRUE(w.Write(env_, path).ok());
  auto r = SafetensorsReader::Open(env_, path);
  ASSERT_TRUE(r.ok()) << r.status();
  float y = 0;
  ASSERT_TRUE((*r)->ReadFloat("x", &y, 1).ok());
  EXPECT_EQ(y, 3.f);
}

}  // namespace
}  // namespace accel::checkpoint
