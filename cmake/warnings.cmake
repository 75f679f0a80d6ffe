# uroce_warnings(target): warnings as errors for the project's own code.
function(uroce_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Werror -Wshadow -Wcast-align
    -Wimplicit-fallthrough -Wno-missing-field-initializers
    $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor -Wold-style-cast>
    # GCC 12 at -O3 reports std::string copies as overlapping memcpy (GCC bug 105651), a false
    # positive inside libstdc++; keep it visible but not fatal.
    $<$<CXX_COMPILER_ID:GNU>:-Wno-error=restrict>)
endfunction()
