// Weights in the executable file: large constants in the aligned weights section, mapped
// (never copied) and shared by every VM and thread; external weights from a provider; and
// the loader's refusals of a corrupt, truncated or foreign file, each with a message that
// says what is wrong.
#include <cstring>
#include <msgpack.hpp>
#include <thread>

#include "builtins/default_builtins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/file_io.h"
#include "support/hash.h"
#include "tests/vm/test_programs.h"
#include "vm/cpu_features.h"
#include "vm/virtual_machine.h"

namespace kiln::vm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string WriteSample(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name;
  EXPECT_TRUE(support::WriteFile(path, testing::BuildSampleExecutable()).ok());
  return path;
}

Tensor Ones(int64_t n) {
  Tensor t = *Tensor::Empty({n}, DTypeFloat32());
  for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = 1.0f;
  return t;
}

// add_weights(ones) = 1 + i / 4, worked by hand.
void ExpectAddWeights(const absl::StatusOr<Value>& r) {
  ASSERT_TRUE(r.ok()) << r.status();
  const Tensor& out = r->as_tensor();
  ASSERT_EQ(out.numel(), 128);
  for (int i = 0; i < 128; ++i) ASSERT_EQ(out.data_as<float>()[i], 1.0f + static_cast<float>(i) / 4) << i;
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(ExecutableWeights, ConstantTensorPointsIntoTheFileMapping) {
  std::string path = WriteSample("weights_mapped.kx");
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::LoadFile(path, builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();
  const support::MappedFile& image = *(*exe)->image();
  EXPECT_TRUE(image.is_mapped());
  const Tensor& w = (*exe)->contents().constants[testing::kSampleWeightsConstant].as_tensor();
  EXPECT_TRUE(image.Contains(w.data(), static_cast<size_t>(w.nbytes())));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data()) % kSectionAlignment, 0u);
  EXPECT_EQ(std::memcmp(w.data(), testing::SampleWeights().data(), 128 * sizeof(float)), 0);
  VirtualMachine vm(*exe);
  ExpectAddWeights(vm.Invoke("add_weights", {Value(Ones(128))}));
}

TEST(ExecutableWeights, LoadFromBytesPointsIntoTheHeldBytes) {
  absl::StatusOr<std::shared_ptr<const Executable>> exe =
      Executable::Load(testing::BuildSampleExecutable(), builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_FALSE((*exe)->image()->is_mapped());
  const Tensor& w = (*exe)->contents().constants[testing::kSampleWeightsConstant].as_tensor();
  EXPECT_TRUE((*exe)->image()->Contains(w.data(), static_cast<size_t>(w.nbytes())));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data()) % kSectionAlignment, 0u);
}

TEST(ExecutableWeights, SmallConstantsStayInline) {
  ExecutableBuilder b;
  Tensor small = *Tensor::Empty({4}, DTypeFloat32());
  for (int i = 0; i < 4; ++i) small.data_as<float>()[i] = static_cast<float>(i) - 1.5f;
  int32_t c = b.AddConstant(Value(small));
  FunctionBuilder& f = b.AddFunction("get", {});
  int32_t r = f.NewRegister();
  f.LoadConst(r, c);
  f.Ret(r);
  absl::StatusOr<std::string> bytes = b.Build();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(*bytes, builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();
  const Tensor& t = (*exe)->contents().constants[c].as_tensor();
  EXPECT_FALSE((*exe)->image()->Contains(t.data()));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t.data_as<float>()[i], static_cast<float>(i) - 1.5f);
}

TEST(ExecutableWeights, TwoVirtualMachinesOnTwoThreadsShareOnePointer) {
  std::string path = WriteSample("weights_shared.kx");
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::LoadFile(path, builtins::DefaultRegistry());
  ASSERT_TRUE(exe.ok()) << exe.status();
  // Each VM runs add_weights and reads the constant back through get_weights, which returns
  // it: both must see the one copy inside the mapping.
  const void* seen[2] = {nullptr, nullptr};
  auto worker = [&](int k) {
    VirtualMachine vm(*exe);
    for (int repeat = 0; repeat < 20; ++repeat) ExpectAddWeights(vm.Invoke("add_weights", {Value(Ones(128))}));
    absl::StatusOr<Value> w = vm.Invoke("get_weights", {});
    if (w.ok()) seen[k] = w->as_tensor().data();
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  ASSERT_NE(seen[0], nullptr);
  EXPECT_EQ(seen[0], seen[1]);
  EXPECT_TRUE((*exe)->image()->Contains(seen[0], 128 * sizeof(float)));
}

TEST(ExecutableWeights, AConstantOutlivesItsExecutable) {
  std::string path = WriteSample("weights_outlive.kx");
  Tensor w;
  {
    absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::LoadFile(path, builtins::DefaultRegistry());
    ASSERT_TRUE(exe.ok()) << exe.status();
    w = (*exe)->contents().constants[testing::kSampleWeightsConstant].as_tensor();
  }
  // The mapping is reference-counted by the tensors viewing it (ASan would catch a read of an
  // unmapped page as a crash).
  for (int i = 0; i < 128; ++i) EXPECT_EQ(w.data_as<float>()[i], static_cast<float>(i) / 4);
}

// ------------------------------------------------------------------ external weights

std::string BuildExternal() {
  ExecutableBuilder b;
  int32_t add_lib = b.DeclareKernel("kiln.add_f32", "ttt", KernelDecl::Source::kLibrary);
  int32_t alloc = b.DeclareBuiltin("kiln.alloc_tensor", "(shape, int) -> tensor");
  int32_t w = b.AddExternalConstant("blk.0.w", DTypeFloat32(), {128});
  FunctionBuilder& f = b.AddFunction("add_weights", {TensorParam("a", DTypeFloat32(), {Dim::Fixed(128)})});
  int32_t shape = f.NewRegister(), wr = f.NewRegister(), out = f.NewRegister();
  f.LoadConst(wr, w);
  f.MakeShape(shape, {Operand::Imm(128)});
  f.CallBuiltin(out, alloc, {Operand::Reg(shape), Operand::Imm(PackDType(DTypeFloat32()))});
  f.CallKernel(add_lib, {Operand::Reg(f.param(0)), Operand::Reg(wr), Operand::Reg(out)});
  f.Ret(out);
  absl::StatusOr<std::string> bytes = b.Build();
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

TEST(ExecutableWeights, ExternalWeightsComeFromTheProviderWithoutACopy) {
  std::string bytes = BuildExternal();
  TensorMapWeightProvider provider;
  Tensor w = testing::SampleWeights();
  provider.Add("blk.0.w", w);
  LoadOptions options;
  options.weights = &provider;
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Executable::Load(bytes, builtins::DefaultRegistry(), options);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->contents().constants[0].as_tensor().data(), w.data());
  VirtualMachine vm(*exe);
  ExpectAddWeights(vm.Invoke("add_weights", {Value(Ones(128))}));
}

TEST(ExecutableWeights, ExternalWeightsAreCheckedAtLoad) {
  std::string bytes = BuildExternal();
  absl::Status none = Executable::Load(bytes, builtins::DefaultRegistry()).status();
  EXPECT_THAT(Message(none), AllOf(HasSubstr("external weight 'blk.0.w' (float32[128])"), HasSubstr("no weight provider")));

  TensorMapWeightProvider provider;
  LoadOptions options;
  options.weights = &provider;
  EXPECT_THAT(Message(Executable::Load(bytes, builtins::DefaultRegistry(), options).status()),
              AllOf(HasSubstr("'blk.0.w'"), HasSubstr("no weight named 'blk.0.w'")));
  provider.Add("blk.0.w", Ones(127));
  EXPECT_THAT(Message(Executable::Load(bytes, builtins::DefaultRegistry(), options).status()),
              HasSubstr("needs external weight 'blk.0.w' as float32[128]; the provider has float32[127]"));
  provider.Add("blk.0.w", *Tensor::Empty({128}, DTypeInt64()));
  EXPECT_THAT(Message(Executable::Load(bytes, builtins::DefaultRegistry(), options).status()),
              HasSubstr("the provider has int64[128]"));

  absl::StatusOr<Executable::Contents> decoded = Executable::Decode(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->external_weights.size(), 1u);
  EXPECT_EQ(decoded->external_weights[0].name, "blk.0.w");
  EXPECT_EQ(decoded->external_weights[0].shape, std::vector<int64_t>{128});
}

// ------------------------------------------------------------------ refusals

struct SectionEntry {
  uint32_t id;
  uint64_t offset, size;
};

std::vector<SectionEntry> Sections(const std::string& file) {
  uint32_t count;
  std::memcpy(&count, file.data() + 12, 4);
  std::vector<SectionEntry> out;
  for (uint32_t i = 0; i < count; ++i) {
    SectionEntry e;
    std::memcpy(&e.id, file.data() + 16 + 32 * i, 4);
    std::memcpy(&e.offset, file.data() + 16 + 32 * i + 8, 8);
    std::memcpy(&e.size, file.data() + 16 + 32 * i + 16, 8);
    out.push_back(e);
  }
  return out;
}

// The file with section `id`'s body replaced, laid out and checksummed as the format says
// (written here from the format's description, not with the encoder).
std::string ReplaceSection(const std::string& file, uint32_t id, const std::string& body) {
  std::vector<SectionEntry> sections = Sections(file);
  std::vector<std::string> bodies;
  for (const SectionEntry& e : sections) bodies.push_back(e.id == id ? body : file.substr(e.offset, e.size));
  std::string out = file.substr(0, 16 + 32 * sections.size());
  for (size_t i = 0; i < sections.size(); ++i) {
    out.resize((out.size() + 63) / 64 * 64, '\0');
    uint64_t offset = out.size(), size = bodies[i].size(), hash = support::Checksum64(bodies[i].data(), size);
    std::memcpy(out.data() + 16 + 32 * i + 8, &offset, 8);
    std::memcpy(out.data() + 16 + 32 * i + 16, &size, 8);
    std::memcpy(out.data() + 16 + 32 * i + 24, &hash, 8);
    out += bodies[i];
  }
  return out;
}

// A constants document of one float32 tensor constant of `shape` in the weights section.
std::string WeightsConstant(const std::vector<int64_t>& shape, uint64_t offset, uint64_t size) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_array(1);
  pk.pack_array(8);
  pk.pack(static_cast<int>(Value::Kind::kTensor));
  pk.pack(static_cast<int>(kDLFloat));
  pk.pack(32);
  pk.pack(1);
  pk.pack(shape);
  pk.pack(1);  // in the weights section
  pk.pack(offset);
  pk.pack(size);
  return std::string(buffer.data(), buffer.size());
}

absl::Status LoadStatus(const std::string& bytes) { return Executable::Load(bytes, builtins::DefaultRegistry()).status(); }

TEST(ExecutableWeights, TheReassembledSampleStillLoads) {
  // The test's own layout code agrees with the encoder, so the refusals below come from the
  // one field each of them changes.
  std::string file = testing::BuildSampleExecutable();
  std::string same = ReplaceSection(file, static_cast<uint32_t>(SectionId::kConstants),
                                    WeightsConstant({128}, 0, 512));
  EXPECT_TRUE(LoadStatus(same).ok()) << LoadStatus(same);
}

TEST(ExecutableWeights, SizesAboveFourGibAndBadOffsetsAreRefusedClearly) {
  std::string file = testing::BuildSampleExecutable();
  auto with = [&](const std::vector<int64_t>& shape, uint64_t offset, uint64_t size) {
    return Message(LoadStatus(ReplaceSection(file, static_cast<uint32_t>(SectionId::kConstants),
                                             WeightsConstant(shape, offset, size))));
  };
  const uint64_t five_gib = uint64_t{5} << 30;
  EXPECT_THAT(with({static_cast<int64_t>(five_gib / 4)}, 0, five_gib),
              AllOf(HasSubstr("tensor constant 0 (float32[1342177280]): weights [offset 0, 5368709120 bytes]"),
                    HasSubstr("run past the end of the weights section (512 bytes)")));
  EXPECT_THAT(with({128}, 32, 512), HasSubstr("misaligned: the offset is not a multiple of 64"));
  EXPECT_THAT(with({128}, 64, 512), HasSubstr("run past the end of the weights section (512 bytes)"));
  EXPECT_THAT(with({128}, uint64_t{1} << 40, 512), HasSubstr("run past the end"));
  EXPECT_THAT(with({128}, 0, 256), HasSubstr("do not match its shape and dtype (512 bytes)"));
  EXPECT_THAT(with({int64_t{1} << 62, 8}, 0, 512), HasSubstr("is too large"));
  EXPECT_THAT(with({128}, uint64_t{1} << 63, 512), HasSubstr("weights offset out of range"));
}

TEST(ExecutableWeights, TruncationIsReportedAsTruncation) {
  std::string file = testing::BuildSampleExecutable();
  std::vector<SectionEntry> sections = Sections(file);
  const SectionEntry& last = sections.back();
  ASSERT_EQ(last.id, static_cast<uint32_t>(SectionId::kWeights));
  // Cut inside the weights section: its magic is intact, so this is no "bad magic".
  std::string cut = file.substr(0, last.offset + 100);
  EXPECT_THAT(Message(LoadStatus(cut)),
              AllOf(HasSubstr("truncated executable: the file is " + std::to_string(cut.size()) + " bytes"),
                    HasSubstr("says it ends at byte " + std::to_string(file.size())),
                    HasSubstr("section weights (bytes " + std::to_string(last.offset) + " to " +
                              std::to_string(file.size()) + ") is cut short")));
  const SectionEntry& object = sections[sections.size() - 2];
  EXPECT_THAT(Message(LoadStatus(file.substr(0, object.offset + 10))),
              HasSubstr("section CPU kernel object (bytes " + std::to_string(object.offset)));
  EXPECT_THAT(Message(LoadStatus(file.substr(0, 12))), HasSubstr("truncated executable: the file is 12 bytes, shorter than the 16-byte header"));
  EXPECT_THAT(Message(LoadStatus(file.substr(0, 5))), HasSubstr("shorter than the 16-byte header"));
  EXPECT_THAT(Message(LoadStatus(file.substr(0, 40))), HasSubstr("truncated executable: the section table"));
  EXPECT_THAT(Message(LoadStatus(file + "extra")), HasSubstr("5 stray bytes after the last section"));
  EXPECT_THAT(Message(LoadStatus("KILNEXF" + file.substr(7))), HasSubstr("bad magic"));
  // Files of other kinds given where a .kx belongs (kiln run model.gguf) are named.
  EXPECT_EQ(Message(LoadStatus(std::string("GGUF\x03\0\0\0\0\0\0\0\0\0\0\0", 16))),
            "not a Kiln executable: the file is a GGUF model (.gguf); models are compiled into a .kx by 'kiln compile'");
  EXPECT_EQ(Message(LoadStatus("module {\n  func @main() {\n    return ()\n  }\n}\n")),
            "not a Kiln executable: the file is text (IR text, a .kir, is compiled into a .kx by 'kiln compile')");
  std::string old = file;
  old[8] = 1;  // format 1.0: constants inside the bytecode, no longer read
  old[10] = 0;
  EXPECT_THAT(Message(LoadStatus(old)), HasSubstr("incompatible executable: file format 1.0, this runtime reads 2.0 to 2." +
                                                  std::to_string(kFormatMinor)));
  std::string flipped = file;
  flipped[last.offset + 3] ^= 1;
  EXPECT_THAT(Message(LoadStatus(flipped)), HasSubstr("section weights (bytes " + std::to_string(last.offset)));
  EXPECT_THAT(Message(LoadStatus(flipped)), HasSubstr("fails its checksum"));
  std::string moved = file;
  uint64_t offset = last.offset + 64;
  std::memcpy(moved.data() + 16 + 32 * (sections.size() - 1) + 8, &offset, 8);
  EXPECT_THAT(Message(LoadStatus(moved)), HasSubstr("should start at byte " + std::to_string(last.offset)));
}

// ------------------------------------------------------------------ CPU features

std::string WithCpuTarget(const std::string& cpu, std::vector<std::string> features) {
  ExecutableBuilder b;
  b.SetCpuTarget(cpu, std::move(features));
  FunctionBuilder& f = b.AddFunction("one", {});
  int32_t r = f.NewRegister();
  f.IntOp(r, IntOpKind::kAdd, Operand::Imm(1), Operand::Imm(0));
  f.Ret(r);
  absl::StatusOr<std::string> bytes = b.Build();
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

TEST(ExecutableCpu, AFeatureTheHostLacksIsRefusedByName) {
  std::string lacking;
  for (const std::string& name : KnownCpuFeatures()) {
    if (!HostHasCpuFeature(name)) {
      lacking = name;
      break;
    }
  }
  if (lacking.empty()) GTEST_SKIP() << "this CPU has every feature the runtime knows";
  absl::Status status = LoadStatus(WithCpuTarget("future-cpu", {"sse2", lacking}));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(status), AllOf(HasSubstr("compiled for CPU 'future-cpu' and use " + lacking + ", which this CPU ("),
                                     HasSubstr("--mcpu host")));
}

TEST(ExecutableCpu, AnUnknownFeatureIsRefused) {
  EXPECT_THAT(Message(LoadStatus(WithCpuTarget("x86-64", {"sse2", "frobnicate"}))),
              HasSubstr("features this runtime cannot detect (frobnicate)"));
}

TEST(ExecutableCpu, TheHostsOwnFeaturesLoad) {
  std::vector<std::string> host;
  for (const std::string& name : KnownCpuFeatures()) {
    if (HostHasCpuFeature(name)) host.push_back(name);
  }
  std::string bytes = WithCpuTarget("host-cpu", host);
  EXPECT_TRUE(LoadStatus(bytes).ok()) << LoadStatus(bytes);
  absl::StatusOr<Executable::Contents> decoded = Executable::Decode(bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->cpu_name, "host-cpu");
  EXPECT_EQ(decoded->cpu_features, host);
}

}  // namespace
}  // namespace kiln::vm
