// The policy loss registry, assembled from the loss files' registration hooks.
#include "algorithm/policy_loss.h"

namespace trinity::algo {

std::vector<uint8_t> PolicyLoss::minibatch_mask(const TokenBatch& whole, Metrics&) const {
  return std::vector<uint8_t>(static_cast<size_t>(whole.B * whole.T), 1);
}

const Registry<PolicyLoss>& policy_loss_registry() {
  static const Registry<PolicyLoss> reg = [] {
    std::vector<RegistryEntry<PolicyLoss>> e;
    add_ratio_losses(e);
    add_rec_loss(e);
    add_sft_losses(e);
    add_m2po_loss(e);
    return Registry<PolicyLoss>("policy_loss_fn", std::move(e));
  }();
  return reg;
}

}  // namespace trinity::algo
