#pragma once
// The answer the daemon's Flagger `rollback` webhook gives (Flagger calls it
// during analysis; 200 means "roll back", anything else "go on"). The
// flagger_rollback action sets it; the webhook handler reads it. Keys are
// canary ids and release ids: the action sets both, so the handler can look
// up whichever the Flagger Canary's metadata names.
//
// Thread-safe.

#include <map>
#include <optional>
#include <string>

#include "core/mutex.h"

namespace gpucanary::actions {

class FlaggerGate {
 public:
  // Marks `key` as "roll back", with why (the verdict's first cause).
  void SetRollback(const std::string& key, std::string reason);
  // Forgets `key` (a new rollout of the same service starts clean).
  void Clear(const std::string& key);

  bool ShouldRollback(const std::string& key) const;
  // The reason given to SetRollback; nullopt when `key` is not set.
  std::optional<std::string> Reason(const std::string& key) const;

 private:
  mutable Mutex mu_;
  std::map<std::string, std::string> rollback_ GUARDED_BY(mu_);  // key -> reason
};

}  // namespace gpucanary::actions
