#include "relax/models/llama_builder.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formats/ggml_type.h"
#include "formats/gguf_tensor_view.h"
#include "relax/block_builder.h"
#include "relax/op/legalize_quantized_matmul_q8.h"
#include "relax/struct_info.h"
#include "support/status_macros.h"

namespace kiln::relax::models {

namespace {

using tir::DataType;
using tir::PrimExpr;

const char* QuantFormatName(formats::GgmlType type) {
  switch (type) {
    case formats::GgmlType::kQ4_0: return "q4_0";
    case formats::GgmlType::kQ4_1: return "q4_1";
    case formats::GgmlType::kQ8_0: return "q8_0";
    case formats::GgmlType::kQ5_0: return "q5_0";
    case formats::GgmlType::kQ5_1: return "q5_1";
    case formats::GgmlType::kQ4_K: return "q4_K";
    case formats::GgmlType::kQ5_K: return "q5_K";
    case formats::GgmlType::kQ6_K: return "q6_K";
    case formats::GgmlType::kQ2_K: return "q2_K";
    case formats::GgmlType::kQ3_K: return "q3_K";
    case formats::GgmlType::kIQ4_NL: return "iq4_nl";
    case formats::GgmlType::kIQ4_XS: return "iq4_xs";
    default: return nullptr;
  }
}

// Every weight type the builder accepts, for messages about one it does not (IQ1*, IQ2*,
// IQ3*, TQ*, ...).
constexpr const char* kSupportedWeightTypes =
    "q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, f16, bf16, f32";

// Which rows of a step get logits: the output projection is vocabulary-sized, so rows whose
// logits nobody reads skip it.
enum class LogitRows { kLast, kAll, kListed };

class LlamaBuilder {
 public:
  LlamaBuilder(const formats::GgufFile& file, const formats::LlamaConfig& config, const LlamaBuildOptions& options,
               int64_t max_tokens)
      : file_(file),
        c_(config),
        max_tokens_(max_tokens),
        ggml_(options.ggml_numerics && !options.ggml_operators),
        ggml_operators_(options.ggml_numerics && options.ggml_operators),
        ggml_operator_numerics_(options.ggml_avx2_build ? "ggml_avx2" : "ggml"),
        quantized_activations_(options.quantized_activations) {}

  // One function: `tokens` of n rows through every layer; the logits of the last row, of
  // every row, or of the rows a `rows` parameter lists (LogitRows).
  absl::StatusOr<Expr> BuildFunction(const std::string& token_dim, LogitRows logit_rows) {
    tir::Var n(token_dim, DataType::Int64(), 1, max_tokens_);
    Var tokens("tokens", TensorSInfo({n}, DataType::Int32()));
    tir::Var s("s", DataType::Int64(), 1, max_tokens_);
    Var rows("rows", TensorSInfo({s}, DataType::Int64()));
    Var cache("cache", ObjectSInfo());
    cache_ = cache;
    n_ = n;
    logit_rows_ = logit_rows;
    rows_ = rows;
    rows_selected_ = logit_rows == LogitRows::kAll;
    BlockBuilder bb;
    bb_ = &bb;
    blocks_.clear();
    std::vector<Var> params = {tokens};
    if (logit_rows == LogitRows::kListed) params.push_back(rows);
    params.push_back(cache);
    KILN_RETURN_IF_ERROR(bb.BeginFunction(params));

    bb.BeginBindingBlock();
    KILN_ASSIGN_OR_RETURN(positions_, bb.Emit(Call(Op("call_builtin"), {ExternFunc("kiln.kv_cache.positions"), cache},
                                                   {}, {TensorSInfo({n}, DataType::Int64())}),
                                              "positions"));
    blocks_.push_back(bb.EndBlock());

    bb.BeginDataflowBlock();
    KILN_ASSIGN_OR_RETURN(Var h, Embed(tokens));
    for (int64_t layer = 0; layer < c_.num_layers; ++layer) {
      KILN_ASSIGN_OR_RETURN(h, Layer(layer, h));
    }
    if (!rows_selected_) {
      KILN_ASSIGN_OR_RETURN(h, SelectLogitRows(h));
    }
    KILN_ASSIGN_OR_RETURN(Var normed, RmsNorm(h, "output_norm.weight"));
    KILN_ASSIGN_OR_RETURN(Var logits,
                          Linear(normed, c_.tied_embeddings ? "token_embd.weight" : "output.weight", "",
                                 {c_.vocab_size, c_.hidden_size}));
    KILN_ASSIGN_OR_RETURN(Var out, bb.EmitOutput(logits, "logits"));
    blocks_.push_back(bb.EndBlock());
    return bb.EndFunction(blocks_, out, StructInfo(), /*is_pure=*/false);
  }

 private:
  absl::StatusOr<Var> Emit(Expr value, const std::string& name) { return bb_->Emit(std::move(value), name); }

  // The rows of `h` (n, hidden) that get logits: the last (kLast) or the listed ones. Taken
  // where llama.cpp takes them (its inp_out_ids): after the last layer's attention, so that
  // layer's feed-forward network and the final norm and (vocabulary-sized) output
  // projection see only those rows. The rows' values are the same either way, but llama.cpp
  // sums a K-quant matmul of 8 or more rows in another order than one of fewer (its tiled
  // kernel), and its FFN there has the output rows alone.
  absl::StatusOr<Var> SelectLogitRows(const Var& h) {
    rows_selected_ = true;
    if (logit_rows_ == LogitRows::kLast) {
      KILN_ASSIGN_OR_RETURN(Var last, Emit(Call(Op("arange"), {PrimValue(n_ - 1), PrimValue(n_)},
                                                {{"dtype", DataType::Int64()}}),
                                           "last"));
      return Emit(Call(Op("take"), {h, last}, {{"axis", int64_t{0}}}), "last_hidden");
    }
    // Several prompts' last rows (take checks the indices).
    return Emit(Call(Op("take"), {h, rows_}, {{"axis", int64_t{0}}}), "listed_hidden");
  }

  // The GGUF tensor `name` as an external constant (one node per name, so the executable
  // declares it once).
  absl::StatusOr<Expr> Weight(const std::string& name, const formats::GgufTensor** tensor_out = nullptr) {
    KILN_ASSIGN_OR_RETURN(const formats::GgufTensor* tensor, file_.GetTensor(name));
    if (tensor_out != nullptr) *tensor_out = tensor;
    auto it = weights_.find(name);
    if (it != weights_.end()) return it->second;
    formats::GgufTensorView view = formats::ViewOf(*tensor);
    KILN_ASSIGN_OR_RETURN(DataType dtype, DataType::Parse(view.dtype));
    Expr constant = Constant(ConstantData{dtype, view.shape, nullptr, name});
    weights_.emplace(name, constant);
    return constant;
  }

  absl::Status ExpectShape(const formats::GgufTensor& t, const std::vector<int64_t>& shape) {
    if (t.shape == shape) return absl::OkStatus();
    auto text = [](const std::vector<int64_t>& s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i) absl::StrAppend(&out, i ? ", " : "", s[i]);
      return out + "]";
    };
    return absl::InvalidArgumentError(absl::StrCat(file_.name(), ": tensor '", std::string(t.name), "' has shape ", text(t.shape),
                                                   ", expected ", text(shape), " for ", c_.Summary()));
  }

  // x (rows, in) times the GGUF weight `name` (out, in) transposed: (rows, out). A weight
  // whose shape is not `expected` (out, in) from the hyperparameters is an error naming it,
  // not a reshape failure deep in the graph or, where the shapes still fit, a wrong model.
  absl::StatusOr<Var> Linear(const Var& x, const std::string& name, const std::string& out_name,
                             const std::vector<int64_t>& expected) {
    const formats::GgufTensor* tensor = nullptr;
    KILN_ASSIGN_OR_RETURN(Expr w, Weight(name, &tensor));
    if (tensor->shape.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(file_.name(), ": tensor '", name, "' must have 2 dims"));
    }
    if (!expected.empty()) KILN_RETURN_IF_ERROR(ExpectShape(*tensor, expected));
    if (const char* format = QuantFormatName(tensor->type)) {
      Attrs attrs = {{"format", std::string(format)}};
      if (!quantized_activations_.empty()) {
        // A GPU computes 8-bit activations for the formats its generated kernel takes;
        // float32 activations for the others (their llama.cpp arithmetic is CPU-only).
        const bool q8 = quantized_activations_ == "q8" && op::QuantizedMatmulQ8Generated(format);
        attrs.emplace("activations", std::string(q8 ? "q8" : "float32"));
      }
      if (const char* summation = Summation(*tensor)) attrs.emplace("summation", std::string(summation));
      return Emit(Call(Op("quantized_matmul"), {x, w}, std::move(attrs)), out_name);
    }
    Expr weight = w;
    if (tensor->type == formats::GgmlType::kF16 || tensor->type == formats::GgmlType::kBF16) {
      KILN_ASSIGN_OR_RETURN(weight, Emit(Call(Op("astype"), {w}, {{"dtype", DataType::Float32()}}), ""));
    } else if (tensor->type != formats::GgmlType::kF32) {
      return absl::UnimplementedError(absl::StrCat(file_.name(), ": tensor '", name, "' has type ",
                                                   std::string(formats::GgmlTypeLayout(tensor->type).name),
                                                   "; supported for matmul weights: ", kSupportedWeightTypes));
    }
    KILN_ASSIGN_OR_RETURN(Var wt, Emit(Call(Op("permute_dims"), {weight}, {{"axes", std::vector<int64_t>{1, 0}}}), ""));
    return Emit(Call(Op("matmul"), {x, wt}), out_name);
  }

  // The order in which llama.cpp's CPU backend sums the matmul with weight `tensor`, where
  // it is not its vec_dot's (nullptr). On AVX2 and AVX-512 CPUs, ggml-cpu's "repack"
  // interleaves the rows of a Q4_0, IQ4_NL, Q4_K or Q2_K matmul weight with a multiple of 8
  // rows for kernels that sum in another order (q8_block_dot.h, kquant_block_dot.h):
  // "blocks". That includes a tied output projection: llama.cpp loads the token embedding a
  // second time as the output layer's weight (TENSOR_DUPLICATED), into the repacking buffer
  // (a Q4_0 SmolLM2 with a Q4_0 token_embd gives bitwise-equal logits only so). The K-quant
  // weights it does not repack go to its tiled matmul when a call has 8 or more rows
  // (ggml-cpu tiled/): "tiles". Q2_K is repacked only by llama.cpp's AVX-512 build: its
  // "blocks" kernel takes the tiled order with the AVX2 arithmetic (ggml_simd.h).
  static const char* Summation(const formats::GgufTensor& tensor) {
    const bool repacked = tensor.shape[0] % 8 == 0;
    switch (tensor.type) {
      case formats::GgmlType::kQ4_0:
      case formats::GgmlType::kIQ4_NL: return repacked ? "blocks" : nullptr;
      case formats::GgmlType::kQ2_K:
      case formats::GgmlType::kQ4_K: return repacked ? "blocks" : "tiles";
      case formats::GgmlType::kQ3_K:
      case formats::GgmlType::kIQ4_XS:
      case formats::GgmlType::kQ5_K:
      case formats::GgmlType::kQ6_K: return "tiles";
      default: return nullptr;
    }
  }

  absl::StatusOr<Var> LinearWithBias(const Var& x, const std::string& prefix, const std::string& out_name,
                                     const std::vector<int64_t>& expected) {
    if (!c_.qkv_bias) return Linear(x, prefix + ".weight", out_name, expected);
    KILN_ASSIGN_OR_RETURN(Var y, Linear(x, prefix + ".weight", "", expected));
    KILN_ASSIGN_OR_RETURN(Expr bias, Float32Vector(prefix + ".bias"));
    return Emit(Call(Op("add"), {y, bias}), out_name);
  }

  // A 1-D float32 (or float16, converted) tensor such as a norm's weight or a bias.
  absl::StatusOr<Expr> Float32Vector(const std::string& name) {
    const formats::GgufTensor* tensor = nullptr;
    KILN_ASSIGN_OR_RETURN(Expr w, Weight(name, &tensor));
    if (tensor->shape.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(file_.name(), ": tensor '", name, "' must have 1 dim"));
    }
    if (tensor->type == formats::GgmlType::kF32) return w;
    if (tensor->type == formats::GgmlType::kF16 || tensor->type == formats::GgmlType::kBF16) {
      return Emit(Call(Op("astype"), {w}, {{"dtype", DataType::Float32()}}), "");
    }
    return absl::UnimplementedError(absl::StrCat(file_.name(), ": tensor '", name, "' has type ",
                                                 std::string(formats::GgmlTypeLayout(tensor->type).name), ", expected f32 or f16"));
  }

  // A VM builtin call between two dataflow blocks (a builtin is not a kernel, so it cannot be
  // inside one): the Vars among `args` and `live` (still used after the call) become outputs
  // of the open dataflow block, which closes; the call is bound in a binding block; the next
  // dataflow block opens. The live Vars are replaced by their outputs.
  absl::StatusOr<Var> CallBetweenBlocks(const std::string& builtin, std::vector<Expr> args, StructInfo out,
                                        std::vector<Var*> live) {
    for (Expr& a : args) {
      const auto* v = a.as<VarNode>();
      if (v != nullptr && v->is_dataflow()) {
        KILN_ASSIGN_OR_RETURN(Var output, bb_->EmitOutput(a, ""));
        for (Var* l : live) {
          if (l->same_as(a)) *l = output;
        }
        a = output;
      }
    }
    for (Var* l : live) {
      if (l->is_dataflow()) {
        KILN_ASSIGN_OR_RETURN(*l, bb_->EmitOutput(*l, ""));
      }
    }
    blocks_.push_back(bb_->EndBlock());
    bb_->BeginBindingBlock();
    args.insert(args.begin(), ExternFunc(builtin));
    KILN_ASSIGN_OR_RETURN(Var result, Emit(Call(Op("call_builtin"), std::move(args), {}, {std::move(out)}), ""));
    blocks_.push_back(bb_->EndBlock());
    bb_->BeginDataflowBlock();
    return result;
  }

  // live: Vars of the open dataflow block still used after the norm (ggml_numerics only).
  absl::StatusOr<Var> RmsNorm(const Var& x, const std::string& weight_name, std::vector<Var*> live = {}) {
    KILN_ASSIGN_OR_RETURN(Expr w, Float32Vector(weight_name));
    const formats::GgufTensor* tensor = file_.FindTensor(weight_name);
    KILN_RETURN_IF_ERROR(ExpectShape(*tensor, {c_.hidden_size}));
    if (ggml_) {
      live.push_back(const_cast<Var*>(&x));
      return CallBetweenBlocks("kiln.ggml.rms_norm", {x, w, PrimValue(tir::FloatImm(DataType::Float(64), c_.rms_norm_epsilon))},
                               x.struct_info(), live);
    }
    Attrs attrs = {{"axes", std::vector<int64_t>{-1}}, {"epsilon", c_.rms_norm_epsilon}};
    if (ggml_operators_) attrs.emplace("numerics", ggml_operator_numerics_);
    return Emit(Call(Op("rms_norm"), {x, w}, std::move(attrs)), "");
  }

  // Token ids -> (n, hidden) float32 rows of the embedding table.
  absl::StatusOr<Var> Embed(const Var& tokens) {
    const formats::GgufTensor* tensor = nullptr;
    KILN_ASSIGN_OR_RETURN(Expr table, Weight("token_embd.weight", &tensor));
    KILN_ASSIGN_OR_RETURN(Var rows, Emit(Call(Op("take"), {table, tokens}, {{"axis", int64_t{0}}}), "embed_rows"));
    if (const char* format = QuantFormatName(tensor->type)) {
      return Emit(Call(Op("dequantize"), {rows}, {{"format", std::string(format)}}), "embed");
    }
    if (tensor->type == formats::GgmlType::kF32) return rows;
    if (tensor->type == formats::GgmlType::kF16 || tensor->type == formats::GgmlType::kBF16) {
      return Emit(Call(Op("astype"), {rows}, {{"dtype", DataType::Float32()}}), "embed");
    }
    return absl::UnimplementedError(absl::StrCat(file_.name(), ": token_embd.weight has type ",
                                                 std::string(formats::GgmlTypeLayout(tensor->type).name),
                                                 "; supported: ", kSupportedWeightTypes));
  }

  absl::StatusOr<Var> Reshape(const Var& x, std::vector<PrimExpr> shape) {
    return Emit(Call(Op("reshape"), {x, ShapeExpr(std::move(shape))}), "");
  }

  absl::StatusOr<Var> Rope(const Var& x, std::vector<Var*> live) {
    if (ggml_) {
      return CallBetweenBlocks("kiln.ggml.rope",
                               {x, positions_, PrimValue(tir::FloatImm(DataType::Float(64), c_.rope_theta)),
                                PrimValue(PrimExpr(c_.rope_dims)), PrimValue(PrimExpr(int64_t{c_.rope_mode == "neox"}))},
                               x.struct_info(), live);
    }
    Attrs attrs = {{"theta", c_.rope_theta}, {"mode", c_.rope_mode}, {"rotary_dims", c_.rope_dims}};
    if (ggml_operators_) attrs.emplace("numerics", ggml_operator_numerics_);
    return Emit(Call(Op("rotary_embedding"), {x, positions_}, std::move(attrs)), "");
  }

  // One decoder layer; `h` is (n, hidden), a Var of the open dataflow block. Closes that
  // block around the attention call and opens the next.
  absl::StatusOr<Var> Layer(int64_t layer, Var h) {
    const std::string p = absl::StrCat("blk.", layer, ".");
    const PrimExpr n = n_;
    KILN_ASSIGN_OR_RETURN(Var x, RmsNorm(h, p + "attn_norm.weight", {&h}));
    const int64_t q_width = c_.num_heads * c_.head_dim, kv_width = c_.num_kv_heads * c_.head_dim;
    KILN_ASSIGN_OR_RETURN(Var q, LinearWithBias(x, p + "attn_q", "", {q_width, c_.hidden_size}));
    KILN_ASSIGN_OR_RETURN(Var k, LinearWithBias(x, p + "attn_k", "", {kv_width, c_.hidden_size}));
    KILN_ASSIGN_OR_RETURN(Var v, LinearWithBias(x, p + "attn_v", "", {kv_width, c_.hidden_size}));
    KILN_ASSIGN_OR_RETURN(q, Reshape(q, {n, c_.num_heads, c_.head_dim}));
    KILN_ASSIGN_OR_RETURN(k, Reshape(k, {n, c_.num_kv_heads, c_.head_dim}));
    KILN_ASSIGN_OR_RETURN(v, Reshape(v, {n, c_.num_kv_heads, c_.head_dim}));
    KILN_ASSIGN_OR_RETURN(q, Rope(q, {&h, &k, &v}));
    KILN_ASSIGN_OR_RETURN(k, Rope(k, {&h, &q, &v}));
    // Leave the dataflow block: the attention builtin writes the cache.
    KILN_ASSIGN_OR_RETURN(Var h_out, bb_->EmitOutput(h, absl::StrCat("h", layer)));
    KILN_ASSIGN_OR_RETURN(Var q_out, bb_->EmitOutput(q, absl::StrCat("q", layer)));
    KILN_ASSIGN_OR_RETURN(Var k_out, bb_->EmitOutput(k, absl::StrCat("k", layer)));
    KILN_ASSIGN_OR_RETURN(Var v_out, bb_->EmitOutput(v, absl::StrCat("v", layer)));
    blocks_.push_back(bb_->EndBlock());

    bb_->BeginBindingBlock();
    const double scale = 1.0 / std::sqrt(static_cast<double>(c_.head_dim));
    KILN_ASSIGN_OR_RETURN(
        Var attn, Emit(Call(Op("call_builtin"),
                            {ExternFunc("kiln.kv_cache.attention"), cache_, PrimValue(PrimExpr(layer)), q_out, k_out,
                             v_out, PrimValue(tir::FloatImm(DataType::Float(64), scale))},
                            {}, {TensorSInfo({n, c_.num_heads, c_.head_dim}, DataType::Float32())}),
                       absl::StrCat("attn", layer)));
    blocks_.push_back(bb_->EndBlock());

    bb_->BeginDataflowBlock();
    KILN_ASSIGN_OR_RETURN(Var a, Reshape(attn, {n, c_.num_heads * c_.head_dim}));
    KILN_ASSIGN_OR_RETURN(Var o, Linear(a, p + "attn_output.weight", "", {c_.hidden_size, q_width}));
    KILN_ASSIGN_OR_RETURN(h, Emit(Call(Op("add"), {h_out, o}), ""));
    if (layer == c_.num_layers - 1 && !rows_selected_) {
      KILN_ASSIGN_OR_RETURN(h, SelectLogitRows(h));
    }
    KILN_ASSIGN_OR_RETURN(x, RmsNorm(h, p + "ffn_norm.weight", {&h}));
    KILN_ASSIGN_OR_RETURN(Var gate, Linear(x, p + "ffn_gate.weight", "", {c_.ffn_size, c_.hidden_size}));
    KILN_ASSIGN_OR_RETURN(Var up, Linear(x, p + "ffn_up.weight", "", {c_.ffn_size, c_.hidden_size}));
    Var mixed;
    if (ggml_) {
      KILN_ASSIGN_OR_RETURN(mixed, CallBetweenBlocks("kiln.ggml.swiglu", {gate, up}, gate.struct_info(), {&h}));
    } else {
      Attrs attrs;
      if (ggml_operators_) attrs.emplace("numerics", ggml_operator_numerics_);
      KILN_ASSIGN_OR_RETURN(Var act, Emit(Call(Op("silu"), {gate}, std::move(attrs)), ""));
      KILN_ASSIGN_OR_RETURN(mixed, Emit(Call(Op("multiply"), {act, up}), ""));
    }
    KILN_ASSIGN_OR_RETURN(Var down, Linear(mixed, p + "ffn_down.weight", "", {c_.hidden_size, c_.ffn_size}));
    return Emit(Call(Op("add"), {h, down}), "");
  }

  const formats::GgufFile& file_;
  const formats::LlamaConfig& c_;
  const int64_t max_tokens_;
  const bool ggml_;            // the kiln.ggml.* host builtins
  const bool ggml_operators_;  // the operators with numerics = "ggml"
  const std::string ggml_operator_numerics_;  // "ggml" or "ggml_avx2"
  const std::string quantized_activations_;
  BlockBuilder* bb_ = nullptr;
  std::vector<BindingBlock> blocks_;
  std::map<std::string, Expr> weights_;
  Var cache_;
  Var positions_;
  PrimExpr n_;
  LogitRows logit_rows_ = LogitRows::kAll;
  Var rows_;             // kListed: the rows parameter
  bool rows_selected_ = false;  // SelectLogitRows has run (or kAll: nothing to select)
};

}  // namespace

absl::StatusOr<IRModule> BuildLlamaModule(const formats::GgufFile& file, const formats::LlamaConfig& config,
                                          const LlamaBuildOptions& options) {
  const int64_t max_tokens = options.max_tokens > 0 ? options.max_tokens : config.context_length;
  LlamaBuilder builder(file, config, options, max_tokens);
  IRModule module;
  KILN_ASSIGN_OR_RETURN(Expr prefill, builder.BuildFunction("n", LogitRows::kLast));
  KILN_RETURN_IF_ERROR(module.Add("prefill", prefill));
  KILN_ASSIGN_OR_RETURN(Expr decode, builder.BuildFunction("b", LogitRows::kAll));
  KILN_RETURN_IF_ERROR(module.Add("decode", decode));
  KILN_ASSIGN_OR_RETURN(Expr prefill_batch, builder.BuildFunction("n", LogitRows::kListed));
  KILN_RETURN_IF_ERROR(module.Add("prefill_batch", prefill_batch));
  return module;
}

}  // namespace kiln::relax::models
