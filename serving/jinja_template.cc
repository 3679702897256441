#include "serving/jinja_template.h"

#include "serving/jinja_syntax.h"
#include "support/status_macros.h"

namespace kiln::serving {

absl::StatusOr<JinjaTemplate> JinjaTemplate::Parse(std::string_view source, std::string name) {
  JinjaTemplate result;
  result.name_ = std::move(name);
  KILN_ASSIGN_OR_RETURN(std::vector<jinja::Segment> segments, jinja::SplitTemplate(source, result.name_));
  KILN_ASSIGN_OR_RETURN(result.root_, jinja::ParseSegments(segments, result.name_));
  return result;
}

absl::StatusOr<std::string> JinjaTemplate::Render(const std::map<std::string, JinjaValue>& variables) const {
  return jinja::RenderTemplate(*root_, name_, variables);
}

}  // namespace kiln::serving
