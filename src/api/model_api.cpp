// The public Model API (include/dietcode/dietcode.h) over model::Model.
#include <fmt/format.h>

#include "dietcode/dietcode.h"
#include "model/model.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

namespace dietcode {

struct Model::Impl {
  model::Model model;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::string& model_dir, const std::string& weights_path,
                  const ModelOptions& options) {
  if (options.threads < 0) user_error("ModelOptions::threads = {}: expected >= 0", options.threads);
  if (options.layers < 0) user_error("ModelOptions::layers = {}: expected >= 0", options.layers);
  model::ModelOptions o;
  o.layers = options.layers;
  o.retarget_to_host = options.retarget_to_host;
  o.code_cache = options.code_cache;
  auto impl = std::make_unique<Impl>(Impl{model::Model::load(model_dir, weights_path, o)});
  runtime::ThreadPool::global().set_num_threads(options.threads > 0 ? options.threads
                                                                    : impl->model.tuned_threads());
  return Model(std::move(impl));
}

int64_t Model::hidden() const {
  return impl_->model.config().hidden;
}

int64_t Model::layers() const {
  return impl_->model.config().layers;
}

std::string Model::describe() const {
  const model::BertConfig& c = impl_->model.config();
  return fmt::format("{} layers, hidden {}, {} heads, ffn {}, tuned for T in {}..{}\n{}", c.layers,
                     c.hidden, c.heads, c.ffn, c.t_min, c.t_max, impl_->model.describe());
}

void Model::forward(int64_t seq_len, Input input, Output output) const {
  if (seq_len < 1) user_error("forward: sequence length {}; expected >= 1", seq_len);
  const int64_t want = seq_len * hidden();
  if (!input.data || input.elements != want)
    user_error("forward: input has {} elements{}; expected seq_len x hidden = {} x {} = {}",
               input.elements, input.data ? "" : " (null)", seq_len, hidden(), want);
  if (!output.data || output.elements != want)
    user_error("forward: output has {} elements{}; expected seq_len x hidden = {} x {} = {}",
               output.elements, output.data ? "" : " (null)", seq_len, hidden(), want);
  impl_->model.forward(input.data, seq_len, output.data);
}

}  // namespace dietcode
