/**
 * @file gid_table.cc
 * @brief merge_gid_table() (gid_table.h).
 */
#include "device/gid_table.h"

#include <algorithm>

namespace uroce::device {

std::vector<Gid> merge_gid_table(const std::vector<Gid>& old, const std::vector<Gid>& now) {
  auto has = [](const std::vector<Gid>& v, const Gid& g) {
    return std::find(v.begin(), v.end(), g) != v.end();
  };
  std::vector<Gid> out = old;
  for (Gid& g : out)
    if (!g.is_zero() && !has(now, g)) g = Gid{};
  size_t free_from = 0;
  for (const Gid& g : now) {
    if (g.is_zero() || has(out, g)) continue;
    while (free_from < out.size() && !out[free_from].is_zero()) ++free_from;
    if (free_from < out.size())
      out[free_from] = g;
    else
      out.push_back(g);
  }
  while (!out.empty() && out.back().is_zero()) out.pop_back();
  return out;
}

}  // namespace uroce::device
