// The Config page's API (docs/studio.md "Config"): set one key of a YAML text in place (comments,
// order and the rest of the text kept; a missing key or section is added), and check a text with the
// same loading as `trinity config check`, reporting the error at its key and line and the effective
// values of the form's keys.
#pragma once

#include <string>
#include <vector>

#include "studio/http_util.h"

namespace trinity::studio {

// `text` with dotted `key` set to `value` (a JSON scalar). HttpError 400 when the text is not YAML,
// a key on the path is not a block mapping (a list, a scalar, a flow {..} section), or the value is
// not a scalar.
std::string yaml_set(const std::string& text, const std::string& key, const json& value);

// {"ok", "errors": [{"key", "line", "message"}], "warnings", "fields", "job_dir"}. `base_dir`: where
// relative paths in the text resolve; `label`: the file name used in messages.
json check_config_text(const std::string& text, const std::string& label, const std::string& base_dir,
                       const std::vector<std::string>& field_keys);

// The form's keys (the Config page shows these).
const std::vector<std::string>& form_keys();

}  // namespace trinity::studio
