# Fails when docs/operators.md differs from what make-operators-doc writes.
execute_process(COMMAND ${GEN} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make-operators-doc failed (${rc})")
endif()
file(READ ${OUT} want)
file(READ ${DOC} have)
if(NOT want STREQUAL have)
  message(FATAL_ERROR "docs/operators.md is stale: run "
    "build/examples/make-operators-doc docs/operators.md")
endif()
