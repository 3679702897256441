// The tuning records database: a text file of JSON lines, one measurement each, appended
// as the tuner measures (docs/tuning.md has the format).
//
//   {"workload": "<hash> <target>", "target": "...", "knobs": "matmul.row_tile=8 ...",
//    "dispatch_var": "n", "size": 256, "seconds": 1.2e-05, "baseline_seconds": 1.5e-05,
//    "error": "", "kiln": "..."}
//
// A failed trial (crash, time-out, wrong result) has seconds -1 and its reason in "error".
// baseline_seconds is the default schedule timed in turns with the candidate, so
// seconds / baseline_seconds compares candidates measured at different times fairly.
// Reading checks every line: a line that is not such an object is an error naming
// FILE:LINE. BestTable picks, per workload and size, the successful record fastest relative
// to its baseline (TrustedRatio; ties to the lesser knob text), so the same file always gives the same
// table; a candidate wins only by beating the default schedule side by side by at least
// kMinSpeedup (or kConfirmedMinSpeedup, measured quietly three times), else the size keeps
// the default knobs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/schedule_rules/cpu_tuned.h"

namespace kiln::tune {

// What wrote a record (a record written by another schedule-rule version still parses; its
// knobs mean what this version's rules make of them).
inline constexpr const char* kRecordWriter = "kiln-tune/1";

// The least measured speed-up over the default schedule that replay trusts: the kernels
// are timed in isolation (warm caches, no neighbours), and on a loaded machine a few
// percent is within the noise of one measurement.
inline constexpr double kMinSpeedup = 1.05;

struct TuningRecord {
  std::string workload{};    // tir::WorkloadKey
  std::string target{};      // the target's text form
  std::string knobs{};       // tir::CpuScheduleKnobs::ToString
  std::string dispatch_var{};  // the symbolic size tuned over, "" for a static kernel
  int64_t size = 0;          // its value in this measurement
  double seconds = -1;       // per call; -1 for a failed trial
  double baseline_seconds = -1;  // the default schedule's per call, timed in turn with it
  std::string error{};       // why it failed
  std::string writer = kRecordWriter;
  bool operator==(const TuningRecord&) const = default;
};

std::string RecordToJsonLine(const TuningRecord& record);  // no newline
absl::StatusOr<TuningRecord> ParseRecordLine(const std::string& line);

// Every record of the file; a missing file is an error, an empty one no records.
absl::StatusOr<std::vector<TuningRecord>> ReadTuningDb(const std::string& path);
absl::Status AppendTuningRecords(const std::string& path, const std::vector<TuningRecord>& records);

// A successful record's speed-up as replay and the tuner credit it: seconds over its own
// baseline, or over `least_baseline` (the least time of the default schedule in any record
// of the same workload and size) when that is larger. On a loaded machine the default
// timed in turns with a candidate is sometimes slowed 5-13x while the candidate is not
// (measured: a matmul2 candidate at n = 300 ran 102 us, its own baseline 228 us, the
// default's least 99 us): without the second bound a slower candidate reads as 0.45x and
// replay would take it. A real win is faster than the default's least time too.
double TrustedRatio(const TuningRecord& record, double least_baseline);

// How much slower than the default's least time (LeastBaselines) a record's own baseline
// may be for the record to count as measured on a quiet machine. A measuring child whose
// whole time slice was contended reads both kernels several times slower, and their ratio
// then says little: a matmul candidate at n = 300 read 109 us beside a baseline of 370 us
// (the default's least: 116 us), then 668 us beside 622 us in its confirming measurement.
inline constexpr double kQuietBaseline = 1.25;

// Whether `record` (successful) was measured quietly: its baseline within kQuietBaseline
// of `least_baseline` (0: unknown, then every record is quiet).
bool MeasuredQuietly(const TuningRecord& record, double least_baseline);

// A smaller speed-up that replay trusts all the same when the knob set was measured
// quietly at least kConfirmedQuietMeasurements times at the size and beat the default it
// was timed in turns with by it every time. Those ratios are side by side, not
// TrustedRatio: at n = 1024 a kernel's default reads 1209-1282 us from one quiet
// measurement to the next (the L3 and the clock are shared), so a candidate's time over
// the default's least time says nothing about a 3 % win; the repetition, not the least
// time, is then the guard against a default slowed beside the candidate. The kernels that
// hold the time at n = 1024 run at the FMA peak, and their real wins are 2-5 % (the
// scores kernel with 16-column tiles or rows outermost, 0.965-0.975x side by side), which
// the 5 % margin threw away; schedules that should tie read 0.987-1.011 side by side.
inline constexpr double kConfirmedMinSpeedup = 1.02;
inline constexpr int kConfirmedQuietMeasurements = 3;

// The measurements of one knob set at one size, as replay counts them.
struct MeasuredKnobs {
  double worst_trusted = 0;             // TrustedRatio, worst over every measurement
  double worst_quiet_trusted = 0;       // ... over the quiet ones (MeasuredQuietly)
  double worst_quiet_side_by_side = 0;  // seconds / baseline_seconds, worst over the quiet ones
  int quiet = 0;                        // how many were quiet

  // `record` (successful); `least_baseline` as for TrustedRatio.
  void Add(const TuningRecord& record, double least_baseline);
  // Its worst TrustedRatio over the quiet measurements, or over all when none was quiet.
  double Ratio() const { return quiet > 0 ? worst_quiet_trusted : worst_trusted; }
  // The ratio replay credits it with where it replaces the default: Ratio() when that beats
  // the default by kMinSpeedup, else the worst quiet side-by-side ratio when
  // kConfirmedQuietMeasurements quiet ones beat it by kConfirmedMinSpeedup; nullopt when
  // neither holds (the default stays).
  std::optional<double> ReplayRatio() const;
  // Whether it was measured at least as fast as the default (a variant stays in use there).
  bool AtLeastAsFast() const;
};

// `records`' least default time per (workload, size), over their successful records.
std::map<std::pair<std::string, int64_t>, double> LeastBaselines(const std::vector<TuningRecord>& records);

// A knob set measured several times at one size counts with its worst TrustedRatio over
// the records measured quietly (MeasuredQuietly), or over all of them when none was.
tir::TuningTable BestTable(const std::vector<TuningRecord>& records);

}  // namespace kiln::tune
