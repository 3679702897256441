// The auto-tuner: knob text, the records database (round trip, corrupt lines, repeated
// measurements), where dispatch thresholds are probed, measurement
// surviving a crashing or hanging child, and tuned builds of the transformer block example
// (knobs that differ by size, so the kernels dispatch at run time) against the reference
// evaluator, replayed to byte-identical executables.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>

#include "builtins/default_builtins.h"
#include "support/check.h"
#include "codegen/build_executable.h"
#include "codegen/cpu_target.h"
#include "relax/text_parser.h"
#include "relax/text_printer.h"
#include "relax/block_builder.h"
#include "relax/transform/pipeline.h"
#include "support/file_io.h"
#include "tests/reference/reference_evaluator.h"
#include "tests/source_dir.h"
#include "tir/schedule_rules/cpu_schedule.h"
#include "tir/structural_hash.h"
#include "tune/crossover.h"
#include "tune/measure.h"
#include "tune/search_space.h"
#include "tune/tuner.h"
#include "tune/tuning_db.h"
#include "tune/workloads.h"
#include "vm/executable.h"
#include "vm/virtual_machine.h"

namespace kiln::tune {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid());
}

tir::CpuScheduleKnobs SmallTiles() {
  tir::CpuScheduleKnobs k;
  k.matmul.row_tile = 2;
  k.matmul.col_vectors = 1;
  k.matmul.unroll_rows = false;
  k.matmul.few_rows = false;
  k.reduction.lanes = 4;
  k.injective.lanes = 4;
  return k;
}

tir::CpuScheduleKnobs WideTiles() {
  tir::CpuScheduleKnobs k;
  k.matmul.row_tile = 6;
  k.matmul.col_vectors = 3;
  k.matmul.pack = 1;
  k.reduction.lanes = 1;
  k.injective.parallel = false;
  return k;
}

// The knobs added after the first records were written, each away from its default.
tir::CpuScheduleKnobs RowsOuterDeepTiles() {
  tir::CpuScheduleKnobs k;
  k.matmul.row_tile = 12;
  k.matmul.rows_outer = true;
  k.matmul.k_unroll = 4;
  k.reduction.lanes = 64;  // a symbolic row's default is two vectors (32 on AVX-512)
  k.injective.lanes = 64;
  return k;
}

// The wide-tile knobs: rows, k blocks, row steps, sub-tiles, packing, the many-rows threshold.
tir::CpuScheduleKnobs WideTileKnobs(int rows, int k_block, int step_rows, int subtiles, int many_rows) {
  tir::CpuScheduleKnobs k;
  k.matmul.row_tile = rows;
  k.matmul.wide_k_block = k_block;
  k.matmul.wide_step_rows = step_rows;
  k.matmul.wide_subtiles = subtiles;
  k.matmul.wide_pack = true;
  k.matmul.many_rows = many_rows;
  return k;
}

// Each wide-tile knob away from its default, AVX2's packed wide tiles from 40 rows.
tir::CpuScheduleKnobs KBlockedWideTiles() {
  tir::CpuScheduleKnobs k = WideTileKnobs(48, 256, 6, 2, 128);
  k.matmul.packed_least_rows = 40;
  return k;
}

// Wide tiles for the block's MLP up projection on AVX2 (k = 64 in two blocks, row steps of
// 2, one sub-tile, packed), register tiles again from 32 rows.
tir::CpuScheduleKnobs BlockWideTiles() { return WideTileKnobs(8, 32, 2, 1, 32); }

TEST(TuneKnobsTest, TextRoundTripsAndRejectsNonsense) {
  for (const tir::CpuScheduleKnobs& k :
       {tir::CpuScheduleKnobs(), SmallTiles(), WideTiles(), RowsOuterDeepTiles(), KBlockedWideTiles(),
        BlockWideTiles()}) {
    absl::StatusOr<tir::CpuScheduleKnobs> back = tir::CpuScheduleKnobs::Parse(k.ToString());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, k);
    EXPECT_EQ(back->ToString(), k.ToString());
  }
  EXPECT_FALSE(tir::CpuScheduleKnobs::Parse("matmul.row_tile=99").ok());
  EXPECT_FALSE(tir::CpuScheduleKnobs::Parse("matmul.tile=4").ok());
  EXPECT_FALSE(tir::CpuScheduleKnobs::Parse("matmul.row_tile=x").ok());
  EXPECT_FALSE(tir::CpuScheduleKnobs::Parse("matmul.k_unroll=0").ok());
  EXPECT_FALSE(tir::CpuScheduleKnobs::Parse("matmul.rows_outer=2").ok());
  EXPECT_FALSE(tir::CpuScheduleKnobs::Parse("matmul.wide_k_block=-16").ok());
  EXPECT_FALSE(tir::CpuScheduleKnobs::Parse("matmul.wide_step_rows=17").ok());
}

// Records written before matmul.rows_outer and matmul.k_unroll existed name only the first
// ten knobs: they load, and the missing knobs take the defaults they were measured with.
TEST(TuneKnobsTest, RecordsFromBeforeANewKnobStillLoad) {
  const std::string old_text =
      "matmul.row_tile=6 matmul.col_vectors=3 matmul.pack=1 matmul.unroll_rows=1 matmul.parallel=1 "
      "matmul.few_rows=1 reduction.lanes=1 reduction.parallel=1 injective.lanes=0 injective.parallel=0";
  absl::StatusOr<tir::CpuScheduleKnobs> old = tir::CpuScheduleKnobs::Parse(old_text);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(*old, WideTiles());
  EXPECT_FALSE(old->matmul.rows_outer);
  EXPECT_EQ(old->matmul.k_unroll, 1);
}

TEST(TuningDbTest, RecordsRoundTripAndTheBestIsPicked) {
  std::vector<TuningRecord> records(4);
  // The second is the faster relative to its baseline (0.5x against 0.67x and 0.8x).
  records[0] = {.workload = "abc cpu", .target = "cpu", .knobs = SmallTiles().ToString(), .dispatch_var = "n",
                .size = 16, .seconds = 2e-6, .baseline_seconds = 3e-6};
  records[1] = {.workload = "abc cpu", .target = "cpu", .knobs = WideTiles().ToString(), .dispatch_var = "n",
                .size = 16, .seconds = 1.5e-6, .baseline_seconds = 3e-6};
  records[2] = {.workload = "abc cpu", .target = "cpu", .knobs = tir::CpuScheduleKnobs().ToString(),
                .dispatch_var = "n", .size = 256, .seconds = -1, .error = "timed out after 1 s"};
  records[3] = {.workload = "abc cpu", .target = "cpu", .knobs = KBlockedWideTiles().ToString(), .dispatch_var = "n",
                .size = 16, .seconds = 2.4e-6, .baseline_seconds = 3e-6};
  const std::string path = TempPath("db_round_trip.jsonl");
  std::remove(path.c_str());
  ASSERT_TRUE(AppendTuningRecords(path, records).ok());
  absl::StatusOr<std::vector<TuningRecord>> back = ReadTuningDb(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, records);
  tir::TuningTable table = BestTable(*back);
  ASSERT_EQ(table.count("abc cpu"), 1u);
  ASSERT_EQ(table["abc cpu"].best_by_size.size(), 1u);  // the failed size has no entry
  EXPECT_EQ(table["abc cpu"].best_by_size[0].first, 16);
  EXPECT_EQ(table["abc cpu"].best_by_size[0].second, WideTiles());
  std::remove(path.c_str());
  // A speed-up within the margin keeps the default knobs.
  records = {{.workload = "w", .target = "cpu", .knobs = WideTiles().ToString(), .size = 1, .seconds = 0.99e-6,
              .baseline_seconds = 1e-6}};
  table = BestTable(records);
  ASSERT_EQ(table["w"].best_by_size.size(), 1u);
  EXPECT_EQ(table["w"].best_by_size[0].second, tir::CpuScheduleKnobs());
}

TEST(TuningDbTest, AKnobSetMeasuredAgainCountsWithItsWorstRatio) {
  // WideTiles won once by 2x and lost the second measurement (0.97x of the default: within
  // the margin); SmallTiles won both times by 1.25x, so it is the best.
  auto record = [](const tir::CpuScheduleKnobs& k, double seconds) {
    return TuningRecord{.workload = "w", .target = "cpu", .knobs = k.ToString(), .dispatch_var = "n", .size = 16,
                        .seconds = seconds, .baseline_seconds = 1e-6};
  };
  std::vector<TuningRecord> records = {record(WideTiles(), 0.5e-6), record(SmallTiles(), 0.8e-6),
                                       record(WideTiles(), 0.97e-6), record(SmallTiles(), 0.8e-6)};
  tir::TuningTable table = BestTable(records);
  ASSERT_EQ(table["w"].best_by_size.size(), 1u);
  EXPECT_EQ(table["w"].best_by_size[0].second, SmallTiles());
  // Measured again and lost: the size keeps the default knobs.
  table = BestTable({record(WideTiles(), 0.5e-6), record(WideTiles(), 0.97e-6)});
  EXPECT_EQ(table["w"].best_by_size[0].second, tir::CpuScheduleKnobs());
}

// The records of a loaded run (1 thread, n = 300): the default's own record at 99 us; a
// candidate at 102 us twice, each time beside a default slowed to 228 and 604 us (0.45x
// and 0.17x by its own baselines); another at 50 us beside a default at 110 us.
TEST(TuningDbTest, AWinOverADisturbedBaselineCountsAgainstTheLeastDefaultTime) {
  auto record = [](const tir::CpuScheduleKnobs& k, double seconds, double baseline) {
    return TuningRecord{.workload = "w", .target = "cpu", .knobs = k.ToString(), .dispatch_var = "n", .size = 300,
                        .seconds = seconds, .baseline_seconds = baseline};
  };
  const TuningRecord slower = record(WideTiles(), 102e-6, 228e-6);
  EXPECT_NEAR(TrustedRatio(slower, 99e-6), 102.0 / 99, 1e-12);
  EXPECT_NEAR(TrustedRatio(slower, 0), 102.0 / 228, 1e-12);  // no least time known: its own
  std::vector<TuningRecord> records = {record(tir::CpuScheduleKnobs(), 99e-6, 99e-6), slower,
                                       record(WideTiles(), 102e-6, 604e-6)};
  EXPECT_EQ(LeastBaselines(records).at({"w", 300}), 99e-6);
  tir::TuningTable table = BestTable(records);
  ASSERT_EQ(table["w"].best_by_size.size(), 1u);
  EXPECT_EQ(table["w"].best_by_size[0].second, tir::CpuScheduleKnobs()) << "a slower kernel must not replace the default";
  // A real win is faster than the default's least time too (50 / 99 = 0.51x).
  records.push_back(record(SmallTiles(), 50e-6, 110e-6));
  table = BestTable(records);
  EXPECT_EQ(table["w"].best_by_size[0].second, SmallTiles());
}

// The scores kernel at n = 300 on a loaded machine (times in us): a candidate first beside
// a slowed default (trusted: 109.1 / 115.5), then in a contended slice where both ran ~6x
// slower (668.1 beside 621.9: its trusted ratio 5.8). Measurements whose baseline is more
// than kQuietBaseline over the default's least time count only while the knob set has no
// quiet ones; its quiet measurements decide, and must all win.
TEST(TuningDbTest, MeasurementsInAContendedSliceDoNotOutvoteQuietOnes) {
  auto record = [](const tir::CpuScheduleKnobs& k, double seconds_us, double baseline_us) {
    return TuningRecord{.workload = "w", .target = "cpu", .knobs = k.ToString(), .dispatch_var = "n", .size = 300,
                        .seconds = seconds_us * 1e-6, .baseline_seconds = baseline_us * 1e-6};
  };
  EXPECT_TRUE(MeasuredQuietly(record(SmallTiles(), 108.5, 116.0), 115.5e-6));
  EXPECT_FALSE(MeasuredQuietly(record(SmallTiles(), 668.1, 621.9), 115.5e-6));
  EXPECT_TRUE(MeasuredQuietly(record(SmallTiles(), 668.1, 621.9), 0));  // no least time known
  std::vector<TuningRecord> records = {record(tir::CpuScheduleKnobs(), 115.5, 115.5),
                                       record(SmallTiles(), 109.1, 369.6), record(SmallTiles(), 668.1, 621.9)};
  EXPECT_EQ(BestTable(records)["w"].best_by_size[0].second, tir::CpuScheduleKnobs())
      << "without a quiet measurement every one counts (5.8x the default)";
  records.push_back(record(SmallTiles(), 108.5, 116.0));
  records.push_back(record(SmallTiles(), 109.0, 117.0));
  EXPECT_EQ(BestTable(records)["w"].best_by_size[0].second, SmallTiles()) << "two quiet wins (0.94x, 0.94x)";
  records.push_back(record(SmallTiles(), 118.0, 116.0));
  EXPECT_EQ(BestTable(records)["w"].best_by_size[0].second, tir::CpuScheduleKnobs())
      << "a quiet measurement where it loses (1.02x) keeps the default";
}

// The scores kernel at n = 1024 (times in us): its default's least time 1209, read
// 1213-1282 in quiet measurements; 16-column tiles read 0.965-0.975x beside their
// default, but 1.00-1.02x of the least time (TrustedRatio). A win below kMinSpeedup counts
// only after kConfirmedQuietMeasurements quiet measurements that each beat the default
// side by side by kConfirmedMinSpeedup, and then with the worst of those ratios.
TEST(TuningDbTest, ASmallWinCountsOnlyWhenConfirmedQuietlyThreeTimes) {
  auto record = [](const tir::CpuScheduleKnobs& k, double seconds_us, double baseline_us) {
    return TuningRecord{.workload = "w", .target = "cpu", .knobs = k.ToString(), .dispatch_var = "n", .size = 1024,
                        .seconds = seconds_us * 1e-6, .baseline_seconds = baseline_us * 1e-6};
  };
  MeasuredKnobs m;
  m.Add(record(SmallTiles(), 1231.2, 1262.7), 1209.2e-6);
  EXPECT_NEAR(m.Ratio(), 1231.2 / 1209.2, 1e-9);
  EXPECT_FALSE(m.ReplayRatio().has_value());
  m.Add(record(SmallTiles(), 1203.0, 1240.0), 1209.2e-6);
  m.Add(record(SmallTiles(), 1600.0, 1700.0), 1209.2e-6);  // a contended slice: not quiet
  EXPECT_EQ(m.quiet, 2);
  EXPECT_FALSE(m.ReplayRatio().has_value()) << "two quiet wins of 2.5-3 % are not enough";
  m.Add(record(SmallTiles(), 1220.0, 1259.0), 1209.2e-6);
  ASSERT_TRUE(m.ReplayRatio().has_value());
  EXPECT_NEAR(*m.ReplayRatio(), 1231.2 / 1262.7, 1e-9);  // the worst quiet side-by-side ratio

  std::vector<TuningRecord> records = {record(tir::CpuScheduleKnobs(), 1209.2, 1209.2),
                                       record(SmallTiles(), 1231.2, 1262.7), record(SmallTiles(), 1203.0, 1240.0),
                                       record(SmallTiles(), 1600.0, 1700.0)};
  EXPECT_EQ(BestTable(records)["w"].best_by_size[0].second, tir::CpuScheduleKnobs());
  records.push_back(record(SmallTiles(), 1220.0, 1259.0));
  EXPECT_EQ(BestTable(records)["w"].best_by_size[0].second, SmallTiles()) << "three quiet wins of 2.5-3 %";
  records.push_back(record(SmallTiles(), 1230.0, 1240.0));
  EXPECT_EQ(BestTable(records)["w"].best_by_size[0].second, tir::CpuScheduleKnobs())
      << "a quiet 0.99x among them: within the noise";
  // A win by kMinSpeedup still counts from one measurement (the tuner confirms it first).
  EXPECT_EQ(BestTable({record(tir::CpuScheduleKnobs(), 1209.2, 1209.2), record(WideTiles(), 1100.0, 1215.0)})["w"]
                .best_by_size[0]
                .second,
            WideTiles());
}

TEST(TuningDbTest, AVariantStaysInUseWhereItTiesTheDefault) {
  auto record = [](int64_t size, const tir::CpuScheduleKnobs& k, double seconds) {
    return TuningRecord{.workload = "w", .target = "cpu", .knobs = k.ToString(), .dispatch_var = "n", .size = size,
                        .seconds = seconds, .baseline_seconds = 1e-6};
  };
  // WideTiles wins at 4 by 1.25x, ties at 8 (0.99x: within the margin) and loses at 16.
  tir::TuningTable table = BestTable({record(4, WideTiles(), 0.8e-6), record(8, WideTiles(), 0.99e-6),
                                      record(16, WideTiles(), 1.1e-6), record(16, tir::CpuScheduleKnobs(), 1e-6)});
  const auto& bests = table["w"].best_by_size;
  ASSERT_EQ(bests.size(), 3u);
  EXPECT_EQ(bests[0].second, WideTiles());
  EXPECT_EQ(bests[1].second, WideTiles());  // kept: not measured slower than the default
  EXPECT_EQ(bests[2].second, tir::CpuScheduleKnobs());
  // Measured slower at 8 (1.01x the default's time): the default there.
  table = BestTable({record(4, WideTiles(), 0.8e-6), record(8, WideTiles(), 1.01e-6)});
  EXPECT_EQ(table["w"].best_by_size[1].second, tir::CpuScheduleKnobs());
}

TEST(CrossoverTest, ProbesBetweenAdjacentSizesWhoseBestsDiffer) {
  tir::TunedWorkload tuned{.dispatch_var = "n",
                           .best_by_size = {{1, SmallTiles()}, {16, SmallTiles()}, {256, WideTiles()},
                                            {2048, tir::CpuScheduleKnobs()}}};
  std::vector<Crossover> probes = CrossoversToProbe(tuned);
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0].lower, 16);
  EXPECT_EQ(probes[0].upper, 256);
  EXPECT_EQ(probes[0].probe, 64);
  EXPECT_EQ(probes[0].below, SmallTiles());
  EXPECT_EQ(probes[0].above, WideTiles());
  EXPECT_EQ(probes[1].probe, 724);
  EXPECT_EQ(probes[1].above, tir::CpuScheduleKnobs());
  // After the probe at 64 found WideTiles best there, the next round bisects 16..64.
  tuned.best_by_size.insert(tuned.best_by_size.begin() + 2, {64, WideTiles()});
  probes = CrossoversToProbe(tuned);
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0].lower, 16);
  EXPECT_EQ(probes[0].upper, 64);
  EXPECT_EQ(probes[0].probe, 32);
  // Sizes one apart leave nothing to probe; nor does a static workload.
  EXPECT_TRUE(CrossoversToProbe({.dispatch_var = "n", .best_by_size = {{1, SmallTiles()}, {2, WideTiles()}}}).empty());
  EXPECT_TRUE(CrossoversToProbe({.dispatch_var = "", .best_by_size = {{0, SmallTiles()}}}).empty());
}

TEST(CrossoverTest, ASpanOfOneVariantIsMeasuredAtItsMostAlignedSize) {
  // SmallTiles won at 7 and at 21 and runs at every size between: 16, where a default
  // tile of 8 or 16 rows has no tail, is measured too.
  tir::TunedWorkload tuned{.dispatch_var = "n",
                           .best_by_size = {{7, SmallTiles()}, {21, SmallTiles()}, {64, tir::CpuScheduleKnobs()},
                                            {300, tir::CpuScheduleKnobs()}}};
  std::vector<Crossover> probes = CrossoversToProbe(tuned);
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0].lower, 7);
  EXPECT_EQ(probes[0].upper, 21);
  EXPECT_EQ(probes[0].probe, 16);
  EXPECT_EQ(probes[0].below, SmallTiles());
  EXPECT_EQ(probes[0].above, SmallTiles());
  EXPECT_EQ(probes[1].probe, 37);  // the crossover between 21 and 64; the default's span is not checked
  // Measured at 16 and still the best there: no size between 7 and 16 or 16 and 21 is more
  // aligned than 16, so nothing more to measure in the span.
  tuned.best_by_size.insert(tuned.best_by_size.begin() + 1, {16, SmallTiles()});
  probes = CrossoversToProbe(tuned);
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(probes[0].probe, 37);
  // Slower than the default at 16: the default runs there, and the next round looks for
  // the thresholds on both sides of it.
  tuned.best_by_size[1].second = tir::CpuScheduleKnobs();
  probes = CrossoversToProbe(tuned);
  ASSERT_EQ(probes.size(), 3u);
  EXPECT_EQ(probes[0].probe, 11);
  EXPECT_EQ(probes[1].probe, 18);
  EXPECT_EQ(probes[2].probe, 37);
}

TEST(CrossoverTest, AlignedSizeBetweenHasMoreTrailingZerosThanBothEnds) {
  EXPECT_EQ(AlignedSizeBetween(7, 21), 16);
  EXPECT_EQ(AlignedSizeBetween(64, 300), 256);
  EXPECT_EQ(AlignedSizeBetween(1, 7), 4);
  EXPECT_EQ(AlignedSizeBetween(300, 1024), 0);  // 512: less aligned than 1024
  EXPECT_EQ(AlignedSizeBetween(1, 16), 0);      // 8: less aligned than 16
  EXPECT_EQ(AlignedSizeBetween(16, 17), 0);     // nothing strictly between
  EXPECT_EQ(AlignedSizeBetween(1025, 2047), 1536);
  EXPECT_EQ(AlignedSizeBetween(3, 5), 4);
}

TEST(TuningDbTest, ACorruptLineIsAnErrorNamingFileAndLine) {
  const std::string path = TempPath("db_corrupt.jsonl");
  TuningRecord good{.workload = "w", .target = "cpu", .knobs = "", .size = 1, .seconds = 1e-6, .baseline_seconds = 1e-6};
  for (const std::string& bad : {std::string("{\"workload\": 3"), std::string("[1, 2]"),
                                 RecordToJsonLine(good).replace(RecordToJsonLine(good).find("\"size\":1"), 8, "\"size\":-4"),
                                 std::string("{\"workload\":\"w\",\"target\":\"cpu\",\"knobs\":\"matmul.pack=7\","
                                             "\"dispatch_var\":\"\",\"size\":1,\"seconds\":1e-6,\"baseline_seconds\":1e-6,\"error\":\"\","
                                             "\"kiln\":\"\"}"),
                                 std::string("{\"workload\":\"w\",\"target\":\"cpu\",\"knobs\":\"\",\"dispatch_var\":\"\","
                                             "\"size\":1,\"seconds\":1e-6,\"baseline_seconds\":-1,\"error\":\"\",\"kiln\":\"\"}")}) {
    ASSERT_TRUE(support::WriteFile(path, RecordToJsonLine(good) + "\n" + bad + "\n").ok());
    absl::StatusOr<std::vector<TuningRecord>> read = ReadTuningDb(path);
    ASSERT_FALSE(read.ok()) << bad;
    EXPECT_NE(read.status().message().find(path + ":2: bad tuning record"), std::string::npos) << read.status();
  }
  std::remove(path.c_str());
  EXPECT_FALSE(ReadTuningDb(path).ok());  // missing file
  absl::StatusOr<std::vector<TuningRecord>> folder = ReadTuningDb(::testing::TempDir());  // not an empty database
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.status().message().find("is a directory, not a file"), std::string::npos) << folder.status();
}

TEST(RepresentativeSizesTest, ClippedToBounds) {
  EXPECT_EQ(RepresentativeSizes(1, 2048), (std::vector<int64_t>{1, 16, 256, 2048}));
  EXPECT_EQ(RepresentativeSizes(1, 1024), (std::vector<int64_t>{1, 16, 256, 1024}));
  EXPECT_EQ(RepresentativeSizes(8, 100), (std::vector<int64_t>{8, 16, 100}));
  EXPECT_EQ(tir::DispatchThreshold(16, 256), 64);
  // Sizes a deployment names (kiln tune --sizes), clipped to the bounds likewise.
  EXPECT_EQ(RepresentativeSizes(1, 2048, {1, 7, 64, 300, 1024}), (std::vector<int64_t>{1, 7, 64, 300, 1024}));
  EXPECT_EQ(RepresentativeSizes(8, 100, {1, 7, 64, 300}), (std::vector<int64_t>{8, 64, 100}));
}

// The transformer block example, parsed.
relax::ParsedModule TransformerBlock(std::string* path) {
  *path = kiln::test::SourceDir() + "/examples/models/transformer_block.kir";
  absl::StatusOr<std::string> text = support::ReadFile(*path);
  KILN_CHECK(text.ok()) << text.status();
  absl::StatusOr<relax::ParsedModule> parsed = relax::ParseModule(*text, *path);
  KILN_CHECK(parsed.ok()) << parsed.status();
  return *std::move(parsed);
}

// Generated kernels only, for `target` (default: this CPU, 2 threads).
relax::PipelineOptions GeneratedOnly(const tir::Target& target = codegen::HostTarget(2)) {
  relax::PipelineOptions options;
  options.libraries.openblas = false;
  options.target = target;
  return options;
}

// An AVX2 CPU, which every machine these tests run on can run (some have no AVX-512).
tir::Target Avx2Target() {
  absl::StatusOr<tir::Target> target = codegen::ResolveCpuTarget(tir::Target::Cpu("haswell", 0, 2));
  KILN_CHECK(target.ok()) << target.status();
  return *target;
}

// The block's kernels as pass `schedule` receives them (GeneratedOnly's pipeline).
std::vector<Workload> BlockWorkloads(const relax::ParsedModule& parsed,
                                     const tir::Target& target = codegen::HostTarget(2)) {
  relax::PipelineOptions options = GeneratedOnly(target);
  options.stop_after = "bind_target";
  absl::StatusOr<relax::IRModule> module = relax::RunPipeline(parsed.module, options, &parsed.locations);
  KILN_CHECK(module.ok()) << module.status();
  absl::StatusOr<std::vector<Workload>> workloads = ExtractWorkloads(*module, options.target);
  KILN_CHECK(workloads.ok()) << workloads.status();
  return *std::move(workloads);
}

TEST(MeasureTest, ACrashOrHangIsAFailedTrialAndTheNextOneWorks) {
  std::string path;
  relax::ParsedModule parsed = TransformerBlock(&path);
  const std::vector<Workload> workloads = BlockWorkloads(parsed);
  ASSERT_FALSE(workloads.empty());
  const Workload& w = workloads.front();
  MeasureRequest request;
  request.func = w.func;
  request.options = {.vector_lanes = GeneratedOnly().target.Float32Lanes(), .num_threads = 1};
  request.cpu = codegen::CpuTarget::Host();
  request.sizes = w.bindings[1];
  request.timeout_seconds = 1;
  request.fault = InjectedFault::kCrash;
  MeasureResult crashed = MeasureInChild(request);
  EXPECT_FALSE(crashed.ok);
  EXPECT_NE(crashed.error.find("signal"), std::string::npos) << crashed.error;
  request.fault = InjectedFault::kHang;
  MeasureResult hung = MeasureInChild(request);
  EXPECT_FALSE(hung.ok);
  EXPECT_NE(hung.error.find("timed out"), std::string::npos) << hung.error;
  request.fault = InjectedFault::kNone;
  request.timeout_seconds = 60;
  request.options.knobs = SmallTiles();
  MeasureResult measured = MeasureInChild(request);
  EXPECT_TRUE(measured.ok) << measured.error;
  EXPECT_GT(measured.seconds, 0);
  EXPECT_GT(measured.baseline_seconds, 0);
}

// The scheduled function of the block's workload `name` with `knobs`, at 16 fp32 lanes
// and one thread (the rows_outer and k_unroll knobs do not depend on the vector width).
// `lanes`: float32 lanes of the vector unit (16: AVX-512, 8: AVX2).
tir::PrimFunc ScheduledWith(const std::vector<Workload>& workloads, const std::string& name,
                            const tir::CpuScheduleKnobs& knobs, int lanes = 16) {
  for (const Workload& w : workloads) {
    if (w.name != name) continue;
    tir::CpuScheduleOptions options{.vector_lanes = lanes, .num_threads = 1, .knobs = knobs};
    absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForCpu(w.func, options);
    KILN_CHECK(f.ok()) << f.status();
    return *f;
  }
  KILN_CHECK(false) << "no workload " << name;
  return tir::PrimFunc();
}

// Each knob the search varies changes the kernels it is meant for (a knob that changes
// nothing would only spend trials).
TEST(TuneKnobsTest, NewKnobsChangeTheSchedule) {
  std::string path;
  relax::ParsedModule parsed = TransformerBlock(&path);
  const std::vector<Workload> workloads = BlockWorkloads(parsed);
  const tir::CpuScheduleKnobs defaults;
  auto differs = [&](const std::string& name, const tir::CpuScheduleKnobs& k) {
    return tir::StructuralHash(ScheduledWith(workloads, name, k)) !=
           tir::StructuralHash(ScheduledWith(workloads, name, defaults));
  };
  tir::CpuScheduleKnobs rows_outer;
  rows_outer.matmul.rows_outer = true;
  tir::CpuScheduleKnobs k_unroll;
  k_unroll.matmul.k_unroll = 8;
  tir::CpuScheduleKnobs other_lanes;
  // The default for a symbolic row is four vectors (64 lanes with AVX-512, 32 with AVX2).
  other_lanes.reduction.lanes = 16;
  // The attention kernel (relax/transform/fuse_attention.h) holds the scores (k = 64), the
  // softmax's row reductions and probs . v (k = n, not split by k_unroll).
  EXPECT_TRUE(differs("attention", rows_outer));
  EXPECT_TRUE(differs("matmul", k_unroll));  // k = 64
  EXPECT_TRUE(differs("attention", k_unroll));
  EXPECT_TRUE(differs("attention", other_lanes));
}

// The wide-tile knobs the search now varies reach the block's MLP up projection (n x 64 .
// 64 x 256, wide tiles below 64 rows) where its 256 columns are wider than the least wide
// tile: with AVX2's 8 lanes (8 vector pairs = 128 columns). Each changes that kernel.
TEST(TuneKnobsTest, WideTileKnobsChangeTheUpProjectionOnAvx2) {
  std::string path;
  relax::ParsedModule parsed = TransformerBlock(&path);
  const std::vector<Workload> workloads = BlockWorkloads(parsed);
  const std::string up = "fused_matmul_add_gelu";
  const uint64_t untuned = tir::StructuralHash(ScheduledWith(workloads, up, tir::CpuScheduleKnobs(), 8));
  std::vector<std::pair<std::string, tir::CpuScheduleKnobs>> knobs(5);
  knobs[0].first = "wide_k_block";
  knobs[0].second.matmul.wide_k_block = 32;  // k = 64: two blocks instead of four
  knobs[1].first = "wide_step_rows";
  knobs[1].second.matmul.wide_step_rows = 2;
  knobs[2].first = "wide_subtiles";
  knobs[2].second.matmul.wide_subtiles = 1;  // one sub-tile of 128 columns per tile
  knobs[3].first = "wide_pack";
  knobs[3].second.matmul.wide_pack = true;
  knobs[4].first = "many_rows";
  knobs[4].second.matmul.many_rows = 32;
  for (const auto& [name, k] : knobs) {
    EXPECT_NE(tir::StructuralHash(ScheduledWith(workloads, up, k, 8)), untuned) << name;
  }
}

// Calls per run, which weigh each kernel's share of the block's time in the search: q, k
// and v are one kernel called three times, the two layer norms one called twice.
// The default's one-knob neighbours: each knob with few values moved to each other value,
// one with many values one step either way; never the default itself, never twice.
TEST(SearchSpaceTest, OneKnobNeighboursOfTheDefault) {
  const tir::CpuScheduleKnobs defaults;
  std::vector<tir::CpuScheduleKnobs> neighbours = OneKnobNeighbours(defaults);
  // Counted by hand from the values in search_space.cc: row_tile 0 -> 1; col_vectors 0 (the
  // rule's, not among the searched values) -> 1, 2, 3, 4; pack -1 -> 0, 1; k_unroll 1 -> 2,
  // 4, 8; wide_k_block 0 -> 8, 32, 64; gemv_rows_per_pass 0 -> 8, 16; packed_least_rows 0 ->
  // 24, 40, 48; stream_prefetch -1 -> 0, 128, 512; the other fifteen knobs one value each
  // (the two-valued ones flipped, the many-valued ones from 0 to their next value).
  EXPECT_EQ(neighbours.size(), 1u + 4 + 2 + 3 + 3 + 2 + 3 + 3 + 15);
  std::set<std::string> texts;
  const std::vector<std::pair<std::string, int>> base = KnobValues(defaults);
  for (const tir::CpuScheduleKnobs& k : neighbours) {
    EXPECT_FALSE(k == defaults);
    EXPECT_TRUE(texts.insert(k.ToString()).second) << "twice: " << k.ToString();
    std::vector<std::pair<std::string, int>> values = KnobValues(k);
    int changed = 0;
    for (size_t i = 0; i < values.size(); ++i) changed += values[i].second != base[i].second;
    EXPECT_EQ(changed, 1) << k.ToString();
  }
  auto has = [&](const std::string& text) {
    absl::StatusOr<tir::CpuScheduleKnobs> k = tir::CpuScheduleKnobs::Parse(text);
    KILN_CHECK(k.ok()) << k.status();
    return texts.count(k->ToString()) > 0;
  };
  EXPECT_TRUE(has("matmul.col_vectors=1"));  // the scores kernel's win at n = 300
  EXPECT_TRUE(has("matmul.row_tile=1"));
  EXPECT_FALSE(has("matmul.row_tile=32"));     // more than one step away
  EXPECT_TRUE(has("reduction.lanes=1"));
  EXPECT_FALSE(has("reduction.lanes=64"));
  EXPECT_TRUE(has("matmul.packed_least_rows=40"));
  EXPECT_TRUE(has("matmul.wide_step_vectors=2"));
  EXPECT_TRUE(has("matmul.wide_prefetch=0"));
  EXPECT_TRUE(has("matmul.stream_prefetch=0"));
  EXPECT_TRUE(has("matmul.edge_steps=0"));
  // A value between two of the knob's values has both as neighbours.
  absl::StatusOr<tir::CpuScheduleKnobs> between = tir::CpuScheduleKnobs::Parse("matmul.row_tile=5");
  ASSERT_TRUE(between.ok());
  std::set<int> row_tiles;
  for (const tir::CpuScheduleKnobs& k : OneKnobNeighbours(*between)) {
    if (k.matmul.row_tile != 5) row_tiles.insert(k.matmul.row_tile);
  }
  EXPECT_EQ(row_tiles, (std::set<int>{4, 6}));
}

// A task's first trials are the default and then its one-knob neighbours, each schedule
// once: the distinct knob sets the records hold, in order, are the default and then every
// neighbour whose scheduled kernel differs from the default's and from the other
// neighbours' (one of each such group), before any other candidate.
TEST(TunerTest, ATasksFirstCandidatesAreTheDefaultsNeighbours) {
  std::string path;
  relax::ParsedModule parsed = TransformerBlock(&path);
  std::vector<Workload> workloads = BlockWorkloads(parsed);
  // The out projection (a small matmul with a bias) at n = 1, alone.
  auto it = std::find_if(workloads.begin(), workloads.end(), [](const Workload& w) { return w.name == "fused_matmul_add"; });
  ASSERT_NE(it, workloads.end());
  Workload w = *it;
  w.sizes = {w.sizes.front()};
  w.bindings = {w.bindings.front()};
  tir::CpuScheduleOptions schedule{.vector_lanes = w.target.Float32Lanes(), .num_threads = 1};
  auto hash_of = [&](const tir::CpuScheduleKnobs& k) {
    schedule.knobs = k;
    absl::StatusOr<tir::PrimFunc> f = tir::ScheduleForCpu(w.func, schedule);
    KILN_CHECK(f.ok()) << f.status();
    return tir::StructuralHash(*f);
  };
  const uint64_t default_hash = hash_of(tir::CpuScheduleKnobs());
  std::set<uint64_t> neighbour_hashes;
  std::set<std::string> neighbour_texts;
  for (const tir::CpuScheduleKnobs& k : OneKnobNeighbours(tir::CpuScheduleKnobs())) {
    uint64_t h = hash_of(k);
    if (h != default_hash) neighbour_hashes.insert(h);
    neighbour_texts.insert(k.ToString());
  }
  ASSERT_GE(neighbour_hashes.size(), 3u);  // the matmul knobs change this kernel

  TuneOptions options;
  options.cpu = codegen::CpuTarget::Host();
  options.threads = 1;
  options.timeout_s = 60;
  options.db_path = TempPath("neighbours.jsonl");
  options.progress = nullptr;
  // The search gets 3/4 of the trials; room for the default, every neighbour, a few
  // confirming measurements of wins and a few candidates after the neighbours.
  options.trials = static_cast<int>(4 * (neighbour_hashes.size() + 12) / 3);
  std::remove(options.db_path.c_str());
  absl::StatusOr<TuneSummary> summary = Tune({w}, options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->failed, 0);
  absl::StatusOr<std::vector<TuningRecord>> records = ReadTuningDb(options.db_path);
  ASSERT_TRUE(records.ok()) << records.status();
  std::remove(options.db_path.c_str());

  std::vector<std::string> distinct;  // knob sets in the order first measured
  for (const TuningRecord& r : *records) {
    if (std::find(distinct.begin(), distinct.end(), r.knobs) == distinct.end()) distinct.push_back(r.knobs);
  }
  ASSERT_GT(distinct.size(), 1 + neighbour_hashes.size());
  EXPECT_EQ(distinct[0], tir::CpuScheduleKnobs().ToString());
  std::set<uint64_t> seen = {default_hash};
  for (size_t i = 1; i <= neighbour_hashes.size(); ++i) {
    EXPECT_TRUE(neighbour_texts.count(distinct[i])) << "trial " << i << " is no neighbour: " << distinct[i];
    absl::StatusOr<tir::CpuScheduleKnobs> k = tir::CpuScheduleKnobs::Parse(distinct[i]);
    ASSERT_TRUE(k.ok());
    EXPECT_TRUE(seen.insert(hash_of(*k)).second) << "a schedule measured twice: " << distinct[i];
  }
  // The candidate after the neighbours is no schedule measured already either.
  absl::StatusOr<tir::CpuScheduleKnobs> next = tir::CpuScheduleKnobs::Parse(distinct[1 + neighbour_hashes.size()]);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(seen.count(hash_of(*next)));
}

TEST(WorkloadsTest, CountCallsOfEachKernel) {
  std::string path;
  relax::ParsedModule parsed = TransformerBlock(&path);
  std::map<std::string, int> calls;
  for (const Workload& w : BlockWorkloads(parsed)) calls[w.name] = w.calls;
  EXPECT_EQ(calls["matmul"], 3);
  EXPECT_EQ(calls["layer_norm"], 2);
  EXPECT_EQ(calls["attention"], 1);
  EXPECT_EQ(calls["fused_matmul_add_gelu"], 1);
}

// Every kernel of the block tuned: small tiles below n = 4, `middle` (default: wide tiles)
// up to 63, from n = 64 (DispatchThreshold(16, 256)) row tiles outermost with the k loop
// unrolled and wider row reductions, so each kernel with n dispatches at run time.
std::shared_ptr<const tir::TuningTable> SizeDependentTable(const relax::ParsedModule& parsed,
                                                           const tir::Target& target = codegen::HostTarget(2),
                                                           const tir::CpuScheduleKnobs& middle = WideTiles()) {
  const std::vector<Workload> workloads = BlockWorkloads(parsed, target);
  auto table = std::make_shared<tir::TuningTable>();
  for (const Workload& w : workloads) {
    tir::TunedWorkload& t = (*table)[w.key];
    t.dispatch_var = w.dispatch_var;
    t.best_by_size = {{1, SmallTiles()}, {16, middle}, {256, RowsOuterDeepTiles()}};
  }
  return table;
}

// The executable's bytes; `scheduled` receives the module after the pipeline as text.
std::string Build(const relax::ParsedModule& parsed, std::shared_ptr<const tir::TuningTable> table,
                  std::string* scheduled = nullptr, const tir::Target& target = codegen::HostTarget(2)) {
  relax::PipelineOptions options = GeneratedOnly(target);
  options.check_well_formed = true;
  options.tuning = std::move(table);
  absl::StatusOr<relax::IRModule> lowered = relax::RunPipeline(parsed.module, options, &parsed.locations);
  KILN_CHECK(lowered.ok()) << lowered.status();
  if (scheduled) *scheduled = relax::PrintModule(*lowered);
  absl::StatusOr<codegen::CpuTarget> cpu = codegen::ToCpuTarget(target);
  KILN_CHECK(cpu.ok()) << cpu.status();
  absl::StatusOr<std::string> bytes = codegen::BuildExecutable(*lowered, *cpu);
  KILN_CHECK(bytes.ok()) << bytes.status();
  return *bytes;
}

reference::RefValue RefOf(const vm::Tensor& t) {
  std::vector<double> values(t.data_as<float>(), t.data_as<float>() + t.numel());
  return reference::RefValue(reference::HostTensor::FromDoubles(tir::DataType::Float32(), t.shape(), values));
}

vm::Tensor Random(const std::vector<int64_t>& shape, uint32_t seed, float scale) {
  vm::Tensor t = *vm::Tensor::Empty(shape, vm::DTypeFloat32());
  uint32_t s = seed * 2654435761u + 7;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data_as<float>()[i] = scale * static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.0f;
  }
  return t;
}

// The block built for `target` with `table` and without: both against the reference
// evaluator at `sizes`, and a second build from the same records scheduled identically.
void ExpectTunedAndUntunedMatchTheReference(const relax::ParsedModule& parsed,
                                            std::shared_ptr<const tir::TuningTable> table, const tir::Target& target,
                                            const std::vector<int64_t>& sizes) {
  // Replay is deterministic up to the kernels handed to LLVM: the same records schedule
  // every kernel identically. (The machine code itself is not compared: two builds of the
  // same untuned module already differ in a few bytes of register allocation.)
  std::string tuned_text, replayed_text, untuned_text;
  const std::string tuned = Build(parsed, table, &tuned_text, target);
  Build(parsed, table, &replayed_text, target);
  EXPECT_TRUE(tuned_text == replayed_text) << "replaying the same records must schedule the same kernels";
  const std::string untuned = Build(parsed, nullptr, &untuned_text, target);
  EXPECT_NE(tuned_text, untuned_text);
  EXPECT_NE(tuned_text.find("_v2"), std::string::npos) << "the size-dependent records should dispatch";
  absl::StatusOr<relax::IRModule> normalized = relax::NormalizeModule(parsed.module, &parsed.locations);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  const std::vector<std::vector<int64_t>> weight_shapes = {{64, 64}, {64, 64}, {64, 64}, {64, 64}, {64}, {64},
                                                           {64, 256}, {256}, {256, 64}, {64}, {64}, {64}};
  for (const std::string* bytes : {&untuned, &tuned}) {
    absl::StatusOr<std::shared_ptr<const vm::Executable>> exe = vm::Executable::Load(*bytes, builtins::DefaultRegistry());
    ASSERT_TRUE(exe.ok()) << exe.status();
    vm::VirtualMachine machine(*exe);
    for (int64_t n : sizes) {
      std::vector<vm::Value> args{vm::Value(Random({n, 64}, 7 + static_cast<uint32_t>(n), 1.0f))};
      std::vector<reference::RefValue> ref_args{RefOf(args[0].as_tensor())};
      for (size_t i = 0; i < weight_shapes.size(); ++i) {
        args.emplace_back(Random(weight_shapes[i], 100 + static_cast<uint32_t>(i), 0.125f));
        ref_args.push_back(RefOf(args.back().as_tensor()));
      }
      absl::StatusOr<vm::Value> got = machine.Invoke("main", args);
      ASSERT_TRUE(got.ok()) << got.status();
      absl::StatusOr<reference::RefValue> want = reference::Evaluate(*normalized, "main", ref_args);
      ASSERT_TRUE(want.ok()) << want.status();
      std::vector<double> w = want->tensor().ToDoubles();
      const vm::Tensor& g = got->as_tensor();
      ASSERT_EQ(g.numel(), static_cast<int64_t>(w.size()));
      for (int64_t i = 0; i < g.numel(); ++i) {
        ASSERT_NEAR(g.data_as<float>()[i], w[i], 1e-3 * (1 + std::fabs(w[i])))
            << (bytes == &tuned ? "tuned" : "untuned") << " n=" << n << " element " << i;
      }
    }
  }
}

TEST(TunedBuildTest, TunedAndUntunedMatchTheReferenceAndReplayIsIdentical) {
  std::string path;
  relax::ParsedModule parsed = TransformerBlock(&path);
  // Both sides of the dispatch thresholds (4 and 64).
  ExpectTunedAndUntunedMatchTheReference(parsed, SizeDependentTable(parsed), codegen::HostTarget(2), {1, 7, 63, 64, 300});
}

// The wide-tile knobs the search varies, on AVX2 where the MLP up projection takes wide
// tiles (from n = 4 to 63 here, register tiles again from the knob's 32 rows).
TEST(TunedBuildTest, WideTileKnobsOnAvx2MatchTheReferenceAndReplayIsIdentical) {
  std::string path;
  relax::ParsedModule parsed = TransformerBlock(&path);
  const tir::Target avx2 = Avx2Target();
  ExpectTunedAndUntunedMatchTheReference(parsed, SizeDependentTable(parsed, avx2, BlockWideTiles()), avx2,
                                         {1, 4, 7, 31, 32, 63, 64, 300});
}

}  // namespace
}  // namespace kiln::tune
