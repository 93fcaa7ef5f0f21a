// Hub repository ids as huggingface_hub spells them: "Org/Name" (or a bare "Name"), with trinity's
// optional "@revision" suffix (branch, tag or 40-hex commit; default "main"), and the cache folder
// name of a repo ("models--Org--Name", "datasets--Org--Name"). A string that exists as a local path
// is never a repo id; neither is one that starts with '/', '.' or '~' or has more than one '/'.
#pragma once

#include <optional>
#include <string>

namespace trinity::hub {

enum class RepoType { kModel, kDataset };

struct RepoRef {
  RepoType type = RepoType::kModel;
  std::string id;                 // "Org/Name"
  std::string revision = "main";  // branch, tag or commit sha
  // "model Org/Name@main" for messages.
  std::string describe() const;
};

// "models" / "datasets" (URL prefixes and cache folder prefixes).
const char* type_plural(RepoType t);
// huggingface_hub's validate_repo_id: [\w.-]+ or [\w.-]+/[\w.-]+, no "--" or "..", no leading or
// trailing '-' / '.', at most 96 characters.
bool valid_repo_id(const std::string& id);
// "Org/Name" or "Org/Name@rev" when `s` has that shape (and is not a local path); else nullopt.
std::optional<RepoRef> parse_repo_id(const std::string& s, RepoType type);
// "models--Org--Name" (the repo's folder in the cache).
std::string repo_folder_name(const RepoRef& r);
// A 40-hex git commit sha.
bool is_commit_sha(const std::string& s);

}  // namespace trinity::hub
