// The studio's web page and the browser libraries it uses, embedded in the binary at build time
// (cmake/embed_files.cmake; uPlot comes from the npm package scripts/setup installs): no CDN, works
// offline.
#pragma once

#include <string_view>
#include <vector>

namespace trinity::studio {

struct Asset {
  std::string_view path;  // URL path: "/", "/static/app.js", ...
  std::string_view content_type;
  std::string_view body;
};

const std::vector<Asset>& assets();

}  // namespace trinity::studio
