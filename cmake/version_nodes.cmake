# Shared by the version-script generators (lib/verbs, lib/rdmacm; cmake -P scripts).
# version_nodes_append(<map var> <entries>): appends to <map var> one node per entry
# ("<sort key>:<node>", sorted), in that order, each inheriting the previous one, the first
# with `local: *`. A node's symbols are the list syms_<C identifier of the node> in the
# caller's scope (sorted, duplicates dropped).
function(version_nodes_append map_var entries)
  set(map "${${map_var}}")
  set(prev "")
  foreach(entry ${entries})
    string(REGEX REPLACE "^[0-9]+:" "" n "${entry}")
    string(MAKE_C_IDENTIFIER "${n}" key)
    set(body "")
    if(DEFINED syms_${key})
      set(syms ${syms_${key}})
      list(REMOVE_DUPLICATES syms)
      list(SORT syms)
      foreach(s ${syms})
        string(APPEND body "    ${s};\n")
      endforeach()
    endif()
    if(prev STREQUAL "")
      string(APPEND map "${n} {\n  global:\n${body}  local: *;\n};\n")
    else()
      string(APPEND map "${n} {\n  global:\n${body}} ${prev};\n")
    endif()
    set(prev ${n})
  endforeach()
  set(${map_var} "${map}" PARENT_SCOPE)
endfunction()
