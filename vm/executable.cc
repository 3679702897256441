#include "vm/executable.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "support/nearest_name.h"
#include "support/status_macros.h"
#include "vm/cpu_features.h"
#include "vm/kernel_object.h"

namespace kiln::vm {

namespace {

// An external weight as the provider gives it, checked against its declaration.
absl::StatusOr<Tensor> ResolveExternal(const ExternalWeight& w, const LoadOptions& options) {
  std::string declared = absl::StrCat(DTypeToString(w.dtype), ShapeToString(w.shape));
  if (options.weights == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("executable needs external weight '", w.name, "' (", declared,
                                                      "), but no weight provider was given (LoadOptions::weights)"));
  }
  absl::StatusOr<Tensor> t = options.weights->Find(w.name);
  if (!t.ok()) {
    return absl::Status(t.status().code(), absl::StrCat("executable needs external weight '", w.name, "' (", declared,
                                                        "): ", t.status().message()));
  }
  std::string problem;
  if (!t->defined()) {
    problem = "the provider returned an undefined tensor";
  } else if (t->dtype() != w.dtype || t->shape() != w.shape) {
    problem = absl::StrCat("the provider has ", t->Describe());
  } else if (t->device().device_type != kDLCPU) {
    problem = "the provider's tensor is not in CPU memory";
  } else if (!t->is_contiguous()) {
    problem = "the provider's tensor is not contiguous";
  }
  if (!problem.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("executable needs external weight '", w.name, "' as ", declared, "; ", problem));
  }
  return t;
}

// " (did you mean 'kiln.tuple_get'?)" when `name` is a typo of a registered one.
template <typename Entry>
std::string NearestRegistered(const std::string& name, const std::map<std::string, Entry>& registered) {
  std::vector<std::string> names;
  names.reserve(registered.size());
  for (const auto& [candidate, entry] : registered) names.push_back(candidate);
  return support::DidYouMean(name, names);
}

// A builtin the executable declares, found in `registry` with a signature compatible with
// the recorded one; the signature each call is checked against is the two met.
absl::StatusOr<std::pair<const BuiltinRegistry::Builtin*, BuiltinSignature>> ResolveBuiltin(
    const BuiltinDecl& decl, const BuiltinRegistry& registry) {
  const BuiltinRegistry::Builtin* builtin = registry.FindBuiltin(decl.name);
  if (builtin == nullptr) {
    return absl::NotFoundError(absl::StrCat("executable needs builtin '", decl.name,
                                            "', which this runtime does not provide",
                                            NearestRegistered(decl.name, registry.builtins())));
  }
  absl::StatusOr<BuiltinSignature> recorded = BuiltinSignature::Parse(decl.signature);
  if (!recorded.ok()) {
    return absl::DataLossError(absl::StrCat("builtin '", decl.name, "' in the executable: ", recorded.status().message()));
  }
  if (!Compatible(builtin->signature, *recorded)) {
    return absl::FailedPreconditionError(absl::StrCat("builtin '", decl.name, "' has signature ",
                                                      builtin->signature.ToString(),
                                                      " in this runtime but the executable expects ", recorded->ToString()));
  }
  return std::make_pair(builtin, Meet(builtin->signature, *recorded));
}

// A library function (KernelDecl::Source::kLibrary) found in `registry` with the same
// argument signature.
absl::StatusOr<const BuiltinRegistry::LibraryKernel*> ResolveLibraryKernel(const KernelDecl& decl,
                                                                          const BuiltinRegistry& registry) {
  const BuiltinRegistry::LibraryKernel* kernel = registry.FindKernel(decl.name);
  if (kernel == nullptr) {
    return absl::NotFoundError(absl::StrCat("executable needs library function '", decl.name,
                                            "', which this runtime does not provide",
                                            NearestRegistered(decl.name, registry.kernels())));
  }
  if (kernel->arg_signature != decl.arg_signature) {
    return absl::FailedPreconditionError(absl::StrCat("library function '", decl.name, "' takes (",
                                                      kernel->arg_signature, ") in this runtime but the executable expects (",
                                                      decl.arg_signature, ")"));
  }
  return kernel;
}

}  // namespace

absl::Status Executable::CheckRuntimeProvides(const Contents& contents, const BuiltinRegistry& registry,
                                              std::string_view prefix) {
  for (const BuiltinDecl& decl : contents.builtins) {
    if (decl.name.starts_with(prefix)) KILN_RETURN_IF_ERROR(ResolveBuiltin(decl, registry).status());
  }
  for (const KernelDecl& decl : contents.kernels) {
    if (decl.source == KernelDecl::Source::kLibrary && decl.name.starts_with(prefix)) {
      KILN_RETURN_IF_ERROR(ResolveLibraryKernel(decl, registry).status());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Executable>> Executable::Load(std::string bytes, const BuiltinRegistry& registry,
                                                                   const LoadOptions& options) {
  return Load(support::MappedFile::FromBytes(std::move(bytes)), registry, options);
}

absl::StatusOr<std::shared_ptr<const Executable>> Executable::Load(std::shared_ptr<const support::MappedFile> image,
                                                                   const BuiltinRegistry& registry,
                                                                   const LoadOptions& options) {
  if (image == nullptr) return absl::InvalidArgumentError("Executable::Load: no image");
  absl::StatusOr<Contents> contents = Decode(image);
  if (!contents.ok()) return contents.status();
  std::shared_ptr<Executable> exe(new Executable());
  exe->image_ = std::move(image);
  exe->contents_ = std::move(*contents);
  Contents& c = exe->contents_;

  // Before anything runs: kernels using extensions this CPU lacks would die of SIGILL.
  if (!c.cpu_features.empty()) {
    absl::Status cpu = CheckCpuFeatures(c.cpu_name, c.cpu_features);
    if (!cpu.ok()) return cpu;
  }
  for (const ExternalWeight& w : c.external_weights) {
    absl::StatusOr<Tensor> t = ResolveExternal(w, options);
    if (!t.ok()) return t.status();
    c.constants[static_cast<size_t>(w.constant)] = Value(*std::move(t));
  }

  for (const BuiltinDecl& decl : c.builtins) {
    absl::StatusOr<std::pair<const BuiltinRegistry::Builtin*, BuiltinSignature>> resolved = ResolveBuiltin(decl, registry);
    if (!resolved.ok()) return resolved.status();
    const BuiltinRegistry::Builtin* builtin = resolved->first;
    exe->builtin_fns_.push_back({builtin->fn, builtin->state.get(), std::move(resolved->second)});
    if (builtin->state != nullptr) exe->builtin_states_.push_back(builtin->state);
  }
  if (!c.cpu_object.empty()) {
    absl::StatusOr<std::shared_ptr<KernelObject>> object = KernelObject::Load(c.cpu_object);
    if (!object.ok()) return object.status();
    exe->cpu_object_ = *object;
  }
  for (const KernelDecl& decl : c.kernels) {
    if (decl.source == KernelDecl::Source::kLibrary) {
      absl::StatusOr<const BuiltinRegistry::LibraryKernel*> kernel = ResolveLibraryKernel(decl, registry);
      if (!kernel.ok()) return kernel.status();
      exe->kernel_fns_.push_back((*kernel)->fn);
    } else {
      absl::StatusOr<KilnKernelFn> fn = exe->cpu_object_->Find(decl.name);
      if (!fn.ok()) return fn.status();
      exe->kernel_fns_.push_back(*fn);
    }
  }
  for (const Function& fn : c.functions) {
    for (const Instruction& in : fn.code) {
      if (in.op == Opcode::kCall) exe->max_call_args_ = std::max(exe->max_call_args_, in.c);
    }
  }
  return std::shared_ptr<const Executable>(std::move(exe));
}

absl::StatusOr<std::shared_ptr<const Executable>> Executable::LoadFile(const std::string& path,
                                                                       const BuiltinRegistry& registry,
                                                                       const LoadOptions& options) {
  absl::StatusOr<std::shared_ptr<const support::MappedFile>> image = support::MappedFile::Open(path);
  if (!image.ok()) return image.status();
  absl::StatusOr<std::shared_ptr<const Executable>> exe = Load(*std::move(image), registry, options);
  if (!exe.ok()) {
    return absl::Status(exe.status().code(), absl::StrCat(path, ": ", exe.status().message()));
  }
  return exe;
}

int32_t Executable::FindFunction(const std::string& name) const {
  for (size_t i = 0; i < contents_.functions.size(); ++i) {
    if (contents_.functions[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

std::string Executable::CompiledFor() const {
  std::string kind = "cpu";
  for (const DeviceCode& code : contents_.device_code) {
    if (!code.kernels.empty()) kind = code.kind;
  }
  return kind;
}

}  // namespace kiln::vm
