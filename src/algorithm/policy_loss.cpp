// The policy loss registry, assembled from the loss files' registration hooks.
#include "algorithm/policy_loss.h"

namespace trinity::algo {

const Registry<PolicyLoss>& policy_loss_registry() {
  static const Registry<PolicyLoss> reg = [] {
    std::vector<RegistryEntry<PolicyLoss>> e;
    add_ratio_losses(e);
    add_rec_loss(e);
    add_sft_losses(e);
    return Registry<PolicyLoss>("policy_loss_fn", std::move(e));
  }();
  return reg;
}

}  // namespace trinity::algo
