#include "store/postings.h"

#include <algorithm>
#include <iterator>

namespace gpucanary::store {

std::uint32_t Symbols::Intern(std::string_view s) {
  if (auto it = ids_.find(s); it != ids_.end()) return it->second;
  strings_.emplace_back(s);
  const auto id = static_cast<std::uint32_t>(strings_.size() - 1);
  ids_.emplace(strings_.back(), id);
  return id;
}

std::uint32_t Symbols::Find(std::string_view s) const {
  auto it = ids_.find(s);
  return it == ids_.end() ? kNone : it->second;
}

SymLabels InternLabels(Symbols& symbols, const model::Labels& labels) {
  SymLabels out;
  out.reserve(labels.size() * 2);
  for (const model::Label& l : labels) {
    out.push_back(symbols.Intern(l.name));
    out.push_back(symbols.Intern(l.value));
  }
  return out;
}

model::Labels ExpandLabels(const Symbols& symbols, const SymLabels& labels) {
  model::Labels out;
  out.reserve(labels.size() / 2);
  for (std::size_t i = 0; i + 1 < labels.size(); i += 2) {
    out.push_back({std::string(symbols.Get(labels[i])), std::string(symbols.Get(labels[i + 1]))});
  }
  return out;
}

std::string_view SymLabelValue(const Symbols& symbols, const SymLabels& labels,
                               std::string_view name) {
  for (std::size_t i = 0; i + 1 < labels.size(); i += 2) {
    if (symbols.Get(labels[i]) == name) return symbols.Get(labels[i + 1]);
  }
  return {};
}

void Postings::Add(std::uint64_t id, const SymLabels& labels) {
  for (std::size_t i = 0; i + 1 < labels.size(); i += 2) {
    std::vector<std::uint64_t>& list = lists_[labels[i]][labels[i + 1]];
    if (list.empty() || list.back() < id) {
      list.push_back(id);
      continue;
    }
    auto it = std::lower_bound(list.begin(), list.end(), id);
    if (*it != id) list.insert(it, id);
  }
}

namespace {

std::vector<std::uint64_t> Intersect(const std::vector<std::uint64_t>& a,
                                     const std::vector<std::uint64_t>& b) {
  std::vector<std::uint64_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

std::vector<std::uint64_t> Postings::Match(
    const Symbols& symbols, const std::vector<model::Matcher>& matchers,
    const std::function<const SymLabels&(std::uint64_t)>& labels_of,
    const std::vector<std::uint64_t>& all_ids) const {
  // Matchers that cannot match an absent label narrow through the postings;
  // the others are checked on each candidate.
  bool narrowed = false;
  std::vector<std::uint64_t> candidates;
  std::vector<const model::Matcher*> residual;
  for (const model::Matcher& m : matchers) {
    if (m.MatchesEmpty()) {
      residual.push_back(&m);
      continue;
    }
    std::vector<std::uint64_t> ids;
    const std::uint32_t name = symbols.Find(m.name());
    auto by_name = name == Symbols::kNone ? lists_.end() : lists_.find(name);
    if (by_name != lists_.end()) {
      if (m.type() == model::Matcher::Type::kEqual) {
        const std::uint32_t value = symbols.Find(m.value());
        if (auto it = by_name->second.find(value); it != by_name->second.end()) ids = it->second;
      } else {
        for (const auto& [value, list] : by_name->second) {
          if (!m.Matches(symbols.Get(value))) continue;
          std::vector<std::uint64_t> merged;
          std::set_union(ids.begin(), ids.end(), list.begin(), list.end(),
                         std::back_inserter(merged));
          ids = std::move(merged);
        }
      }
    }
    candidates = narrowed ? Intersect(candidates, ids) : std::move(ids);
    narrowed = true;
    if (candidates.empty()) return {};
  }
  if (!narrowed) candidates = all_ids;
  if (residual.empty()) return candidates;
  std::vector<std::uint64_t> out;
  for (std::uint64_t id : candidates) {
    const SymLabels& labels = labels_of(id);
    bool ok = true;
    for (const model::Matcher* m : residual) {
      if (!m->Matches(SymLabelValue(symbols, labels, m->name()))) {
        ok = false;
        break;
      }
    }
    if (ok) out.push_back(id);
  }
  return out;
}

}  // namespace gpucanary::store
