// The sampler against distributions computed here from the definitions of each transform,
// and the stop strings against hand-worked streams.
#include "serving/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "serving/stop_strings.h"

namespace kiln::serving {
namespace {

using ::testing::HasSubstr;

SamplingParams Plain(double temperature) {
  SamplingParams p = SamplingParams::Greedy();
  p.temperature = temperature;
  p.seed = 42;
  return p;
}

// Frequencies of `draws` samples from `logits`.
std::map<int32_t, double> Frequencies(const SamplingParams& params, const std::vector<float>& logits, int draws) {
  Sampler sampler(params);
  std::map<int32_t, double> freq;
  for (int i = 0; i < draws; ++i) {
    std::vector<float> copy = logits;
    freq[sampler.Sample(copy, {})] += 1.0 / draws;
  }
  return freq;
}

// softmax(logits / t) restricted to `keep`.
std::map<int32_t, double> Expected(const std::vector<float>& logits, double t, const std::vector<int32_t>& keep) {
  std::map<int32_t, double> p;
  double sum = 0;
  for (int32_t id : keep) sum += p[id] = std::exp(logits[static_cast<size_t>(id)] / t);
  for (auto& [id, v] : p) v /= sum;
  return p;
}

void ExpectClose(const std::map<int32_t, double>& got, const std::map<int32_t, double>& want, int draws) {
  for (const auto& [id, f] : got) EXPECT_TRUE(want.count(id)) << "token " << id << " should never be drawn";
  for (const auto& [id, p] : want) {
    const double sigma = std::sqrt(p * (1 - p) / draws);
    const double f = got.count(id) ? got.at(id) : 0.0;
    EXPECT_NEAR(f, p, 5 * sigma + 1e-9) << "token " << id;
  }
}

TEST(Sampler, GreedyTakesTheArgmaxAndTheLowestIdAmongTies) {
  Sampler sampler(SamplingParams::Greedy());
  std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, NAN};
  EXPECT_EQ(sampler.Sample(logits, {}), 1);
  std::vector<float> nan_first = {NAN, -5.0f, -4.0f};
  EXPECT_EQ(sampler.Sample(nan_first, {}), 2);
}

TEST(Sampler, TemperatureDrawsFollowTheSoftmax) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.0f, -1.0f};
  for (double t : {0.5, 1.0, 2.0}) {
    ExpectClose(Frequencies(Plain(t), logits, 40000), Expected(logits, t, {0, 1, 2, 3}), 40000);
  }
}

TEST(Sampler, TopKTopPAndMinPKeepExactlyTheirSets) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.25f), std::log(0.15f), std::log(0.1f)};
  SamplingParams k = Plain(1.0);
  k.top_k = 2;
  ExpectClose(Frequencies(k, logits, 20000), Expected(logits, 1.0, {0, 1}), 20000);
  SamplingParams p = Plain(1.0);
  p.top_p = 0.8;  // 0.5 + 0.25 < 0.8 <= 0.9: three tokens
  ExpectClose(Frequencies(p, logits, 20000), Expected(logits, 1.0, {0, 1, 2}), 20000);
  SamplingParams m = Plain(1.0);
  m.min_p = 0.25;  // tokens with p >= 0.125: three
  ExpectClose(Frequencies(m, logits, 20000), Expected(logits, 1.0, {0, 1, 2}), 20000);
  SamplingParams off = Plain(1.0);  // k = 0, p = 1, min_p = 0: all
  ExpectClose(Frequencies(off, logits, 20000), Expected(logits, 1.0, {0, 1, 2, 3}), 20000);
  // top-p and min-p see probabilities before the temperature (llama.cpp's order).
  SamplingParams hot = p;
  hot.temperature = 2.0;
  ExpectClose(Frequencies(hot, logits, 20000), Expected(logits, 2.0, {0, 1, 2}), 20000);
}

TEST(Sampler, PenaltiesChangeExactlyTheSeenTokens) {
  SamplingParams params = SamplingParams::Greedy();
  params.repeat_penalty = 2.0;
  params.presence_penalty = 0.5;
  params.frequency_penalty = 0.25;
  params.repeat_last_n = 3;
  Sampler sampler(params);
  std::vector<float> logits = {4.0f, -2.0f, 1.0f, 3.0f};
  const int32_t history[] = {3, 0, 1, 0};  // the window is {0, 1, 0}: token 3 is outside it
  sampler.Sample(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 4.0f / 2 - 0.5f - 0.25f * 2);
  EXPECT_FLOAT_EQ(logits[1], -2.0f * 2 - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(logits[2], 1.0f);
  EXPECT_FLOAT_EQ(logits[3], 3.0f);
}

TEST(Sampler, LogitBiasAndSeedsReproduce) {
  SamplingParams params = Plain(1.0);
  params.logit_bias = {{2, 100.0f}};
  Sampler biased(params);
  std::vector<float> logits = {5.0f, 5.0f, 0.0f};
  EXPECT_EQ(biased.Sample(logits, {}), 2);

  const std::vector<float> flat(1000, 0.0f);
  auto run = [&](uint64_t seed) {
    SamplingParams p = Plain(1.0);
    p.seed = seed;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 50; ++i) {
      std::vector<float> copy = flat;
      out.push_back(s.Sample(copy, {}));
    }
    return out;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
  // The generator is specified: its first outputs for seed 0 are fixed on every machine.
  SamplingRandom r(0);
  const uint64_t first = r.Next();
  SamplingRandom again(0);
  EXPECT_EQ(again.Next(), first);
  EXPECT_LT(SamplingRandom(3).Uniform(), 1.0);
}

TEST(Sampler, ValidationNamesTheParameter) {
  SamplingParams p;
  p.top_p = 1.5;
  EXPECT_THAT(std::string(p.Validate(10).message()), HasSubstr("top_p must be in (0, 1]"));
  p = SamplingParams();
  p.temperature = -1;
  EXPECT_THAT(std::string(p.Validate(10).message()), HasSubstr("temperature must be a finite number >= 0"));
  p = SamplingParams();
  p.logit_bias = {{10, 1.0f}};
  EXPECT_THAT(std::string(p.Validate(10).message()), HasSubstr("token 10, outside [0, 10)"));
  EXPECT_TRUE(SamplingParams().Validate(10).ok());
}

std::string Stream(const std::vector<std::string>& stops, const std::vector<std::string>& pieces, bool* stopped) {
  StopStrings s(stops);
  std::string out;
  for (const std::string& piece : pieces) {
    out += s.Push(piece);
    if (s.stopped()) break;
  }
  out += s.Finish();
  *stopped = s.stopped();
  return out;
}

TEST(StopStrings, AcrossTokensOverlappingAndAtTheStart) {
  bool stopped = false;
  EXPECT_EQ(Stream({"User:"}, {"Hi", " Us", "er", ": more"}, &stopped), "Hi ");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(Stream({"ab"}, {"a", "a", "b", "c"}, &stopped), "a");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(Stream({"\n\n"}, {"\n\nx"}, &stopped), "");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(Stream({"é!"}, {"caf", "\xc3", "\xa9", "!"}, &stopped), "caf");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(Stream({"xyz"}, {"x", "y", "w"}, &stopped), "xyw");
  EXPECT_FALSE(stopped);
  // Held-back text is released once it cannot start a stop string.
  StopStrings s({"END"});
  EXPECT_EQ(s.Push("the E"), "the ");
  EXPECT_EQ(s.Push("N"), "");
  EXPECT_EQ(s.Push("d"), "ENd");
}

}  // namespace
}  // namespace kiln::serving
