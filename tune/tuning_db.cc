// Reading and writing tuning records as JSON lines (nlohmann::json).
#include "tune/tuning_db.h"

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace kiln::tune {

std::string RecordToJsonLine(const TuningRecord& r) {
  nlohmann::ordered_json j;
  j["workload"] = r.workload;
  j["target"] = r.target;
  j["knobs"] = r.knobs;
  j["dispatch_var"] = r.dispatch_var;
  j["size"] = r.size;
  j["seconds"] = r.seconds;
  j["baseline_seconds"] = r.baseline_seconds;
  j["error"] = r.error;
  j["kiln"] = r.writer;
  return j.dump();
}

absl::StatusOr<TuningRecord> ParseRecordLine(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("not a JSON object");
  if (!j.is_object()) return absl::InvalidArgumentError("a record must be a JSON object");
  TuningRecord r;
  auto text = [&](const char* key, std::string* out) -> absl::Status {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return absl::InvalidArgumentError(absl::StrCat("'", key, "' must be a string"));
    *out = it->get<std::string>();
    return absl::OkStatus();
  };
  for (auto [key, out] : {std::pair{"workload", &r.workload}, {"target", &r.target}, {"knobs", &r.knobs},
                          {"dispatch_var", &r.dispatch_var}, {"error", &r.error}, {"kiln", &r.writer}}) {
    if (absl::Status s = text(key, out); !s.ok()) return s;
  }
  auto size = j.find("size");
  if (size == j.end() || !size->is_number_integer() || size->get<int64_t>() < 0) {
    return absl::InvalidArgumentError("'size' must be a non-negative integer");
  }
  r.size = size->get<int64_t>();
  for (auto [key, out] : {std::pair{"seconds", &r.seconds}, {"baseline_seconds", &r.baseline_seconds}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number() || !(it->get<double>() > 0 || it->get<double>() == -1)) {
      return absl::InvalidArgumentError(absl::StrCat("'", key, "' must be a positive number or -1"));
    }
    *out = it->get<double>();
  }
  if ((r.seconds > 0) != (r.baseline_seconds > 0)) {
    return absl::InvalidArgumentError("'seconds' and 'baseline_seconds' must both be measured or both -1");
  }
  if (absl::StatusOr<tir::CpuScheduleKnobs> k = tir::CpuScheduleKnobs::Parse(r.knobs); !k.ok()) return k.status();
  return r;
}

absl::StatusOr<std::vector<TuningRecord>> ReadTuningDb(const std::string& path) {
  // A directory opens as an ifstream and reads as an empty database: say so instead.
  if (std::error_code error; std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat("tuning database '", path, "' is a directory, not a file"));
  }
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read tuning database '", path, "'"));
  std::vector<TuningRecord> records;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    absl::StatusOr<TuningRecord> r = ParseRecordLine(line);
    if (!r.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", number, ": bad tuning record: ", r.status().message()));
    }
    records.push_back(*std::move(r));
  }
  return records;
}

absl::Status AppendTuningRecords(const std::string& path, const std::vector<TuningRecord>& records) {
  std::ofstream out(path, std::ios::app);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write tuning database '", path, "'"));
  for (const TuningRecord& r : records) out << RecordToJsonLine(r) << "\n";
  out.flush();
  if (!out) return absl::InternalError(absl::StrCat("writing tuning database '", path, "' failed"));
  return absl::OkStatus();
}

double TrustedRatio(const TuningRecord& record, double least_baseline) {
  const double own = record.seconds / record.baseline_seconds;
  return least_baseline > 0 ? std::max(own, record.seconds / least_baseline) : own;
}

void MeasuredKnobs::Add(const TuningRecord& record, double least_baseline) {
  const double trusted = TrustedRatio(record, least_baseline);
  worst_trusted = std::max(worst_trusted, trusted);
  if (MeasuredQuietly(record, least_baseline)) {
    worst_quiet_trusted = std::max(worst_quiet_trusted, trusted);
    worst_quiet_side_by_side = std::max(worst_quiet_side_by_side, record.seconds / record.baseline_seconds);
    ++quiet;
  }
}

std::optional<double> MeasuredKnobs::ReplayRatio() const {
  if (Ratio() <= 1.0 / kMinSpeedup) return Ratio();
  if (quiet >= kConfirmedQuietMeasurements && worst_quiet_side_by_side <= 1.0 / kConfirmedMinSpeedup) {
    return worst_quiet_side_by_side;
  }
  return std::nullopt;
}

bool MeasuredKnobs::AtLeastAsFast() const {
  return Ratio() <= 1.0 || (quiet >= kConfirmedQuietMeasurements && worst_quiet_side_by_side <= 1.0);
}

bool MeasuredQuietly(const TuningRecord& record, double least_baseline) {
  return least_baseline <= 0 || record.baseline_seconds <= kQuietBaseline * least_baseline;
}

std::map<std::pair<std::string, int64_t>, double> LeastBaselines(const std::vector<TuningRecord>& records) {
  std::map<std::pair<std::string, int64_t>, double> least;
  for (const TuningRecord& r : records) {
    if (r.seconds <= 0 || r.baseline_seconds <= 0) continue;
    auto [it, inserted] = least.try_emplace({r.workload, r.size}, r.baseline_seconds);
    if (!inserted) it->second = std::min(it->second, r.baseline_seconds);
  }
  return least;
}

tir::TuningTable BestTable(const std::vector<TuningRecord>& records) {
  // A knob set measured several times at one size counts with its worst ratio to the
  // default: the tuner measures a would-be winner again, and a candidate must win every
  // time (the noise of a loaded machine makes single lucky measurements). Measurements
  // taken while the machine slowed the default well past its least time are left out when
  // the knob set has quiet ones: their ratio is the load's, not the schedules'.
  const std::map<std::pair<std::string, int64_t>, double> least_baseline = LeastBaselines(records);
  std::map<std::tuple<std::string, int64_t, std::string>, MeasuredKnobs> measured;
  std::map<std::string, std::string> dispatch_var;
  for (const TuningRecord& r : records) {
    if (r.seconds <= 0) continue;
    dispatch_var[r.workload] = r.dispatch_var;
    auto least_it = least_baseline.find({r.workload, r.size});
    measured[{r.workload, r.size, r.knobs}].Add(r, least_it == least_baseline.end() ? 0.0 : least_it->second);
  }
  // (workload, size) -> best (ratio, knobs) so far; knobs "" : the default knobs (nothing
  // beat them by the margin yet). The map's order makes ties go to the lesser knob text.
  std::map<std::pair<std::string, int64_t>, std::pair<double, std::string>> best;
  for (const auto& [key, m] : measured) {
    const auto& [workload, size, knobs] = key;
    auto [slot, inserted] = best.try_emplace({workload, size}, 1.0, "");
    std::optional<double> ratio = m.ReplayRatio();
    if (!ratio) continue;
    if (slot->second.second.empty() || *ratio < slot->second.first) slot->second = {*ratio, knobs};
  }
  // A variant that won at a smaller size stays in use at the next size while it was
  // measured there at least as fast as the default (ratio <= 1) even if not by the margin:
  // switching back to the default needs evidence that the variant is slower. Kernels with
  // tails are not monotonic in n (a variant can tie the default at n = 8, where the
  // default's tile fits exactly, and win by 20 % at 7); the threshold then moves past the
  // tie instead of landing at 7.
  for (auto it = best.begin(); it != best.end(); ++it) {
    if (it == best.begin() || std::prev(it)->first.first != it->first.first || !it->second.second.empty()) continue;
    const auto& [ratio_below, knobs_below] = std::prev(it)->second;
    if (knobs_below.empty()) continue;
    auto m = measured.find({it->first.first, it->first.second, knobs_below});
    if (m != measured.end() && m->second.AtLeastAsFast()) it->second = {m->second.Ratio(), knobs_below};
  }
  tir::TuningTable table;
  for (const auto& [key, choice] : best) {
    tir::TunedWorkload& w = table[key.first];
    w.dispatch_var = dispatch_var[key.first];
    // Parsed when read, so this holds.
    w.best_by_size.emplace_back(key.second, choice.second.empty() ? tir::CpuScheduleKnobs()
                                                                  : *tir::CpuScheduleKnobs::Parse(choice.second));
  }
  return table;
}

}  // namespace kiln::tune
