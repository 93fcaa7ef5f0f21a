// Rank 0's lead and the followers' loop of data-parallel training (see dist_train.h).
#include "launcher/dist_train.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "core/parallel.h"
#include "model/config.h"
#include "tensor/blas.h"

namespace trinity::launcher {

using nlohmann::json;

namespace {

int g_stage = 0;

void send(dist::Comm& comm, const json& header, const std::string& body = "") {
  std::string msg = header.dump();
  msg += '\n';
  msg += body;
  comm.broadcast(msg, 0, strcat("the '", header.value("cmd", ""), "' message to the other ranks"));
}

void share(dist::Comm& comm, float* data, int64_t n, const char* what) {
  comm.broadcast(data, n, 0, strcat("the broadcast of the ", what));
}

// A model's weights: the fp32 ones, and the bf16-held ones as raw bytes (a broadcast copies bits).
void share_weights(dist::Comm& comm, model::Transformer& m, const char* what) {
  share(comm, m.params(), m.num_params(), what);
  if (m.num_held() > 0) share(comm, reinterpret_cast<float*>(m.held()), m.num_held() / 2, what);  // n_held is even
}

void check_size(const json& h, const char* key, int64_t mine, int rank) {
  const int64_t theirs = h.at(key).get<int64_t>();
  if (theirs != mine)
    throw ConfigError("dist", strcat("rank ", rank, "'s trainer has ", mine, " ", key, " parameters, rank 0's ", theirs,
                                     ": every rank must run the same config (algorithm, model) and binary"));
}

}  // namespace

int current_stage() {
  return g_stage;
}
void set_current_stage(int i) {
  g_stage = i;
}

bool choose_rank_threads() {
  if (!dist::launched_distributed()) return false;
  if (std::getenv("TRINITY_THREADS") || std::getenv("OMP_NUM_THREADS")) return true;
  const char* ls = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int local = std::max(1, ls ? std::atoi(ls) : 1);
  const int n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local);
  set_num_threads(n);
  tensor::blas_set_threads(n);
  return true;
}

void share_trainer_state(dist::Comm& comm, trainer::PolicyTrainer& tr) {
  if (comm.size() <= 1) return;
  auto& alg = tr.algorithm();
  json h;
  if (comm.rank() == 0) {
    h = {{"actor", tr.actor().num_params()},
         {"actor_held", tr.actor().num_held()},
         {"reference_held", tr.reference() ? tr.reference()->num_held() : 0},
         {"adapters", tr.actor().has_lora() ? tr.actor().num_trainable() : 0},
         {"reference", tr.reference() ? tr.reference()->num_params() : 0},
         {"critic", tr.critic() ? tr.critic()->num_params() : 0},
         {"optimizer_steps", tr.optimizer().steps()},
         {"critic_optimizer_steps", tr.critic_optimizer() ? tr.critic_optimizer()->steps() : 0},
         {"last_step", tr.last_step()},
         {"kl_penalty_coef", alg.kl_penalty().coef()},
         {"kl_loss_coef", alg.kl_loss().coef()}};
  }
  std::string text = h.dump();
  comm.broadcast(text, 0, "the trainer state header");
  if (comm.rank() != 0) {
    h = json::parse(text);
    check_size(h, "actor", tr.actor().num_params(), comm.rank());
    check_size(h, "actor_held", tr.actor().num_held(), comm.rank());
    check_size(h, "reference_held", tr.reference() ? tr.reference()->num_held() : 0, comm.rank());
    check_size(h, "adapters", tr.actor().has_lora() ? tr.actor().num_trainable() : 0, comm.rank());
    check_size(h, "reference", tr.reference() ? tr.reference()->num_params() : 0, comm.rank());
    check_size(h, "critic", tr.critic() ? tr.critic()->num_params() : 0, comm.rank());
    tr.optimizer().set_steps(h.at("optimizer_steps").get<int64_t>());
    if (tr.critic_optimizer()) tr.critic_optimizer()->set_steps(h.at("critic_optimizer_steps").get<int64_t>());
    tr.set_last_step(h.at("last_step").get<int64_t>());
    alg.kl_penalty().set_coef(h.at("kl_penalty_coef").get<double>());
    alg.kl_loss().set_coef(h.at("kl_loss_coef").get<double>());
  }
  share_weights(comm, tr.actor(), "actor weights");
  if (tr.actor().has_lora()) share(comm, tr.actor().trainable_params(), tr.actor().num_trainable(), "actor adapters");
  share(comm, tr.optimizer().m().data(), static_cast<int64_t>(tr.optimizer().m().size()), "actor optimizer moments");
  share(comm, tr.optimizer().v().data(), static_cast<int64_t>(tr.optimizer().v().size()), "actor optimizer moments");
  if (auto* ref = tr.reference()) share_weights(comm, *ref, "reference weights");
  if (auto* critic = tr.critic()) {
    share(comm, critic->params(), critic->num_params(), "critic weights");
    auto* co = tr.critic_optimizer();
    share(comm, co->m().data(), static_cast<int64_t>(co->m().size()), "critic optimizer moments");
    share(comm, co->v().data(), static_cast<int64_t>(co->v().size()), "critic optimizer moments");
  }
}

void lead_trainer(dist::Comm& comm, int stage, int64_t schedule_steps, const std::string& model_dir,
                  trainer::PolicyTrainer& tr) {
  if (comm.size() <= 1) return;
  log::info("trainer: data parallel over ", comm.size(), " ranks (", comm.backend(), ")");
  json h = {{"cmd", "trainer"}, {"stage", stage}, {"schedule_steps", schedule_steps}};
  if (tr.actor().has_lora()) {  // its shape may come from an adapter file only rank 0 has
    const auto& l = tr.actor().lora_config();
    h["lora"] = {{"rank", l.rank},
                 {"alpha", l.alpha},
                 {"dropout", l.dropout},
                 {"target_modules", l.target_modules},
                 {"exclude_modules", l.exclude_modules}};
  }
  if (tr.actor().weight_storage() == model::WeightStorage::kBF16) h["bf16_layers"] = true;  // a bf16-held base
  if (tr.reference() && tr.reference()->weight_storage() == model::WeightStorage::kBF16) h["bf16_reference"] = true;
  send(comm, h, file::read_all(file::join(model_dir, "config.json")));
  share_trainer_state(comm, tr);
}

void lead_step(dist::Comm& comm, int64_t step, const std::vector<buffer::Experience>& batch) {
  if (comm.size() <= 1) return;
  std::string body;
  for (const auto& e : batch) {
    body += buffer::experience_to_json(e);
    body += '\n';
  }
  send(comm, {{"cmd", "step"}, {"step", step}}, body);
}

void lead_end_trainer(dist::Comm& comm) {
  if (comm.size() > 1) send(comm, {{"cmd", "end"}});
}

void lead_done(dist::Comm& comm) {
  if (comm.size() > 1) send(comm, {{"cmd", "done"}});
}

void follow(dist::Comm& comm, const config::LoadResult& loaded) {
  choose_rank_threads();
  std::unique_ptr<trainer::PolicyTrainer> tr;
  int64_t steps = 0;
  for (;;) {
    std::string msg;
    comm.broadcast(msg, 0, "rank 0's next message", /*wait_forever=*/true);
    const size_t nl = msg.find('\n');
    const json h = json::parse(msg.substr(0, nl));
    const std::string body = nl == std::string::npos ? "" : msg.substr(nl + 1);
    const std::string cmd = h.at("cmd").get<std::string>();
    if (cmd == "done") break;
    if (cmd == "trainer") {
      const int stage = h.at("stage").get<int>();
      if (stage < 0 || (loaded.stages.empty() ? stage != 0 : stage >= static_cast<int>(loaded.stages.size())))
        throw ConfigError("dist", strcat("rank 0 runs stage ", stage, ", which rank ", comm.rank(),
                                         "'s config does not have: every rank must run the same config"));
      const config::Config& c = loaded.stages.empty() ? loaded.config : loaded.stages[static_cast<size_t>(stage)];
      trainer::TrainerOptions o = trainer_options(c, h.at("schedule_steps").get<int64_t>());
      o.comm = &comm;
      if (h.value("bf16_reference", false)) o.reference_storage = model::WeightStorage::kBF16;
      const model::ModelConfig mc = model::parse_config(body, "rank 0's model config.json");
      model::Transformer actor(
          mc, model::HeadKind::kLm,
          h.value("bf16_layers", false) ? model::WeightStorage::kBF16 : model::WeightStorage::kF32);
      actor.set_gradient_checkpointing(c.trainer.gradient_checkpointing);
      if (h.contains("lora")) {
        const json& l = h["lora"];
        model::LoraConfig lc;
        lc.rank = l.at("rank").get<int64_t>();
        lc.alpha = l.at("alpha").get<double>();
        lc.dropout = l.at("dropout").get<double>();
        lc.target_modules = l.at("target_modules").get<std::vector<std::string>>();
        lc.exclude_modules = l.at("exclude_modules").get<std::vector<std::string>>();
        actor.add_lora(lc, 0);  // its weights come from rank 0
      }
      tr = std::make_unique<trainer::PolicyTrainer>(std::move(actor), c.algorithm, o);
      share_trainer_state(comm, *tr);
      log::info("rank ", comm.rank(), ": training stage '", c.name, "' from step ", tr->last_step());
    } else if (cmd == "step") {
      if (!tr) throw Error("dist", "rank 0 sent a train step before starting a trainer");
      std::vector<buffer::Experience> batch;
      size_t pos = 0;
      while (pos < body.size()) {
        const size_t e = body.find('\n', pos);
        batch.push_back(buffer::experience_from_json(std::string_view(body).substr(pos, e - pos), "rank 0's batch"));
        pos = e == std::string::npos ? body.size() : e + 1;
      }
      tr->train_step(std::move(batch), h.at("step").get<int64_t>());
      ++steps;
    } else if (cmd == "end") {
      tr.reset();
    } else {
      throw Error("dist", strcat("unknown message '", cmd, "' from rank 0 (ranks run different trinity builds?)"));
    }
  }
  log::info("rank ", comm.rank(), ": done after ", steps, " train steps");
}

}  // namespace trinity::launcher
