// The playground page (src/serve/page.html), compiled into the binary by CMake.
#pragma once

#include <string_view>

namespace gpt {

std::string_view playground_page();

}  // namespace gpt
