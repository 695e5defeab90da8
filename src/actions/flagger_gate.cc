#include "actions/flagger_gate.h"

#include <utility>

#include "core/mutex.h"

namespace gpucanary::actions {

void FlaggerGate::SetRollback(const std::string& key, std::string reason) {
  MutexLock lock(mu_);
  rollback_[key] = std::move(reason);
}

void FlaggerGate::Clear(const std::string& key) {
  MutexLock lock(mu_);
  rollback_.erase(key);
}

bool FlaggerGate::ShouldRollback(const std::string& key) const {
  MutexLock lock(mu_);
  return rollback_.count(key) != 0;
}

std::optional<std::string> FlaggerGate::Reason(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = rollback_.find(key);
  if (it == rollback_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gpucanary::actions
