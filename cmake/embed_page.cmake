# cmake -DINPUT=page.html -DOUTPUT=page.cpp -P embed_page.cmake: the page as gpt::playground_page().
file(READ "${INPUT}" page)
string(FIND "${page}" ")gpt_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's delimiter )gpt_page\"")
endif()
file(WRITE "${OUTPUT}.tmp" "// Generated from src/serve/page.html by cmake/embed_page.cmake.\n#include \"serve/page.h\"\n\n"
     "namespace gpt {\n\nstd::string_view playground_page() {\n  static constexpr char kPage[] = R\"gpt_page(${page})gpt_page\";\n"
     "  return {kPage, sizeof kPage - 1};\n}\n\n}  // namespace gpt\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
