// Hub settings from the environment (see env.h).
#include "hub/env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/text.h"

namespace trinity::hub {

namespace {

std::string getenv_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string expand_user(const std::string& p) {
  if (p.empty() || p[0] != '~') return p;
  return getenv_str("HOME") + p.substr(1);
}

}  // namespace

bool env_true(const char* value) {
  if (!value) return false;
  std::string v(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

HubEnv HubEnv::from_environment() {
  HubEnv e;
  if (std::string ep = getenv_str("HF_ENDPOINT"); !ep.empty()) {
    while (!ep.empty() && ep.back() == '/') ep.pop_back();
    e.endpoint = ep;
  }
  std::string home = getenv_str("HF_HOME");
  if (home.empty()) {
    const std::string xdg = getenv_str("XDG_CACHE_HOME");
    home = (xdg.empty() ? getenv_str("HOME") + "/.cache" : xdg) + "/huggingface";
  }
  home = expand_user(home);
  e.cache_dir = getenv_str("HF_HUB_CACHE");
  if (e.cache_dir.empty()) e.cache_dir = getenv_str("HUGGINGFACE_HUB_CACHE");
  if (e.cache_dir.empty()) e.cache_dir = home + "/hub";
  e.cache_dir = expand_user(e.cache_dir);
  e.token = trim(getenv_str("HF_TOKEN"));
  if (e.token.empty()) e.token = trim(getenv_str("HUGGING_FACE_HUB_TOKEN"));
  if (e.token.empty()) {
    std::string path = getenv_str("HF_TOKEN_PATH");
    path = path.empty() ? home + "/token" : expand_user(path);
    std::ifstream in(path);
    if (in) {
      std::ostringstream os;
      os << in.rdbuf();
      e.token = trim(os.str());
    }
  }
  e.offline = env_true(std::getenv("HF_HUB_OFFLINE")) || env_true(std::getenv("TRANSFORMERS_OFFLINE"));
  e.datasets_offline = e.offline || env_true(std::getenv("HF_DATASETS_OFFLINE"));
  return e;
}

}  // namespace trinity::hub
