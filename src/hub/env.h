// The Hub settings from the environment, read as huggingface_hub reads them:
//   HF_ENDPOINT        default https://huggingface.co (a trailing '/' is dropped)
//   HF_HUB_CACHE       else HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub; HF_HOME defaults to
//                      $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface
//   HF_TOKEN           else HUGGING_FACE_HUB_TOKEN, else the file HF_TOKEN_PATH (default $HF_HOME/token)
//   HF_HUB_OFFLINE     also TRANSFORMERS_OFFLINE, and HF_DATASETS_OFFLINE for datasets; true is
//                      1 / ON / YES / TRUE (any case)
#pragma once

#include <string>

namespace trinity::hub {

struct HubEnv {
  std::string endpoint = "https://huggingface.co";
  std::string cache_dir;          // the hub cache (holds models--*/ datasets--*/)
  std::string token;              // "" = anonymous
  bool offline = false;           // HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE
  bool datasets_offline = false;  // offline, or HF_DATASETS_OFFLINE

  static HubEnv from_environment();
};

// huggingface_hub's _is_true: "1", "ON", "YES", "TRUE" in any case.
bool env_true(const char* value);

}  // namespace trinity::hub
