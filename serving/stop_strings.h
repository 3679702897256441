// StopStrings: ends generation at the first occurrence of any of a request's stop strings in
// the generated text, matched on the text (not on tokens), so a stop string split across
// tokens is found. While streaming, text that could be the start of a stop string is held
// back until it is known not to be, and the stop string itself (and anything after it) is
// never emitted — what OpenAI's `stop` and llama.cpp's reverse prompts do.
//
//   StopStrings stops({"\n\n", "User:"});
//   for each decoded piece: { std::string out = stops.Push(piece); emit(out); if (stops.stopped()) break; }
//   emit(stops.Finish());   // at the end of generation for another reason
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::serving {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops);

  // Appends generated text; returns what may be emitted now. After a stop string is seen,
  // stopped() is true and later pushes return nothing.
  std::string Push(std::string_view text);
  // The held-back text, when generation ends without a stop string.
  std::string Finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace kiln::serving
