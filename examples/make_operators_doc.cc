// make-operators-doc OUT: writes docs/operators.md, the operator catalogue
// as Markdown (common/families.h CatalogueMarkdown); with no argument,
// prints it.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "common/families.h"

int main(int argc, char** argv) {
  const std::string md = irontune::CatalogueMarkdown();
  if (argc < 2) {
    std::cout << md;
    return 0;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << md;
  out.close();
  if (!out) {
    std::fprintf(stderr, "make-operators-doc: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
