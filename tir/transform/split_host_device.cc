#include "tir/transform/split_host_device.h"

#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "tir/stmt_functor.h"
#include "tir/target.h"
#include "tir/transform/make_kernel_abi.h"

namespace kiln::tir::transform {
namespace {

PrimExpr I64(int64_t v) { return PrimExpr(v); }
PrimExpr ToI64(const PrimExpr& e) { return e.dtype() == DataType::Int64() ? e : Cast(DataType::Int64(), e); }

const char* const kTags[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};

int TagIndex(const std::string& tag) {
  for (int i = 0; i < 6; ++i) {
    if (tag == kTags[i]) return i;
  }
  return -1;
}

// What a loop nest reads from outside itself, in order of first appearance.
class NestScan : public StmtExprVisitor {
 public:
  void VisitVarDef(const Var& var) override { defined_.insert(var.get()); }
  void VisitExpr_(const VarNode* op, const PrimExpr& self) override {
    if (defined_.count(op) == 0 && seen_vars_.insert(op).second) {
      free_vars.push_back(Var(std::static_pointer_cast<const VarNode>(self.node())));
    }
  }
  void VisitBufferDef(const Buffer& buffer) override {
    allocated_.insert(buffer.get());
    StmtExprVisitor::VisitBufferDef(buffer);
  }
  void VisitBufferUse(const Buffer& buffer) override {
    if (allocated_.count(buffer.get()) == 0 && seen_buffers_.insert(buffer.get()).second) {
      outside_buffers.push_back(buffer);
      // Its shape is part of the device kernel too (it is re-declared there).
      StmtExprVisitor::VisitBufferDef(buffer);
    }
  }
  void VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kThreadBinding) {
      int tag = TagIndex(op->thread_tag);
      if (tag < 0) {
        if (status.ok()) {
          status = absl::InvalidArgumentError(absl::StrCat("loop ", op->loop_var.name(), " is bound to '",
                                                           op->thread_tag, "', which is not a GPU thread index (",
                                                           "blockIdx.x/y/z or threadIdx.x/y/z)"));
        }
      } else {
        extents.emplace_back(tag, op->extent, op->loop_var.name());
      }
    }
    StmtExprVisitor::VisitStmt_(op, self);
  }
  bool Defined(const VarNode* v) const { return defined_.count(v) > 0; }

  std::vector<Var> free_vars;
  std::vector<Buffer> outside_buffers;
  std::vector<std::tuple<int, PrimExpr, std::string>> extents;
  absl::Status status;

 private:
  std::unordered_set<const VarNode*> defined_;
  std::unordered_set<const VarNode*> seen_vars_;
  std::unordered_set<const BufferNode*> allocated_;
  std::unordered_set<const BufferNode*> seen_buffers_;
};

class VarsIn : public StmtExprVisitor {
 public:
  void VisitExpr_(const VarNode* op, const PrimExpr&) override { vars.insert(op); }
  std::set<const VarNode*> vars;
};

class Splitter : public StmtExprMutator {
 public:
  explicit Splitter(const Target& target) : target_(target) {}

  Stmt VisitStmt_(const DeclBufferNode* op, const Stmt& self) override {
    declared_[op->buffer.get()] = op->data;
    return StmtExprMutator::VisitStmt_(op, self);
  }

  // An allocation the host part makes (the mutator never enters a kernel's nest): device
  // workspace that the kernels inside it receive as a buffer argument.
  Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    host_allocated_.insert(op->buffer.get());
    return StmtExprMutator::VisitStmt_(op, self);
  }

  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) return StmtExprMutator::VisitStmt_(op, self);
    if (!status.ok()) return self;
    absl::StatusOr<Stmt> launch = Outline(self);
    if (!launch.ok()) {
      status = launch.status();
      return self;
    }
    return *launch;
  }

  absl::Status status;
  std::vector<PrimFunc> kernels;

 private:
  absl::StatusOr<Stmt> Outline(const Stmt& nest) {
    NestScan scan;
    scan.VisitStmt(nest);
    KILN_RETURN_IF_ERROR(scan.status);
    std::vector<PrimExpr> dims(6);
    for (const auto& [tag, extent, loop] : scan.extents) {
      VarsIn used;
      used.VisitExpr(extent);
      for (const VarNode* v : used.vars) {
        if (scan.Defined(v)) {
          return absl::InvalidArgumentError(absl::StrCat("the extent ", ToString(extent), " of loop ", loop, " (",
                                                         kTags[tag], ") depends on ", v->name,
                                                         ", which is defined inside the kernel; a launch "
                                                         "dimension must be known before the launch"));
        }
      }
      dims[tag] = dims[tag].defined() ? Max(dims[tag], ToI64(extent)) : ToI64(extent);
    }
    std::vector<PrimFuncParam> params;
    std::vector<PrimExpr> launch_args;
    std::vector<std::pair<Buffer, Var>> redeclared;
    for (const Buffer& buffer : scan.outside_buffers) {
      PrimExpr address;
      if (auto it = declared_.find(buffer.get()); it != declared_.end()) {
        address = it->second;
      } else if (host_allocated_.count(buffer.get()) > 0) {
        if (buffer->scope != "global") {
          return absl::InvalidArgumentError(absl::StrCat(
              "buffer ", buffer->name, " (scope \"", buffer->scope, "\") is allocated outside the GPU kernel that ",
              "uses it; only global memory can be device workspace shared by kernels"));
        }
        // The workspace's first element: the host emitter allocates it on the device.
        address = Call("address_of", {buffer.Load(std::vector<PrimExpr>(buffer.ndim(), I64(0)))});
      } else {
        return absl::InvalidArgumentError(absl::StrCat("buffer ", buffer->name,
                                                       " is used by a GPU kernel but neither declared nor allocated "
                                                       "outside it"));
      }
      Var data(buffer->name + "_data", DataType::Handle());
      params.push_back({Buffer(), data});
      launch_args.push_back(address);
      redeclared.emplace_back(buffer, data);
    }
    for (const Var& v : scan.free_vars) {
      params.push_back({Buffer(), v});
      launch_args.push_back(v);
    }
    Stmt body = nest;
    for (auto it = redeclared.rbegin(); it != redeclared.rend(); ++it) body = DeclBuffer(it->first, it->second, body);
    kernels.push_back(PrimFunc(std::move(params), body,
                               {{kTargetAttr, target_.ToString()}, {kCallingConvAttr, kDeviceKernel}}));

    std::vector<PrimExpr> call = {I64(static_cast<int64_t>(kernels.size() - 1))};
    for (const PrimExpr& d : dims) call.push_back(d.defined() ? d : I64(1));
    call.push_back(I64(0));  // dynamic shared memory bytes
    for (const PrimExpr& a : launch_args) call.push_back(a);
    return Evaluate(Call("launch_kernel", std::move(call)));
  }

  const Target& target_;
  std::unordered_map<const BufferNode*, PrimExpr> declared_;
  std::unordered_set<const BufferNode*> host_allocated_;
};

class ThreadBindingFinder : public StmtExprVisitor {
 public:
  void VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kThreadBinding && found == nullptr) found = op;
    StmtExprVisitor::VisitStmt_(op, self);
  }
  const ForNode* found = nullptr;
};

}  // namespace

absl::StatusOr<SplitResult> SplitHostDevice(const PrimFunc& func) {
  KILN_ASSIGN_OR_RETURN(std::optional<Target> target, TargetOf(func));
  if (!target || target->is_cpu()) {
    ThreadBindingFinder finder;
    finder.VisitStmt(func->body);
    if (finder.found != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("loop ", finder.found->loop_var.name(), " is bound to the GPU thread index ",
                       finder.found->thread_tag,
                       ", which the CPU target cannot run; compile this function for a GPU target or make the "
                       "loop serial or parallel"));
    }
    return SplitResult{func, {}};
  }
  Splitter splitter(*target);
  Stmt body = splitter.VisitStmt(func->body);
  KILN_RETURN_IF_ERROR(splitter.status);
  return SplitResult{PrimFunc(func->params, body, func->attrs), std::move(splitter.kernels)};
}

}  // namespace kiln::tir::transform
