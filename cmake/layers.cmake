# uroce_write_targets(FILE): writes one line per target of the build, for the layer check
# (tests/layers/check_layers.py): name, type, source folder, the targets and items it links
# (LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES, as written) and its include directories,
# tab-separated, lists ';'-separated. Called at the end of the top CMakeLists.txt, when every
# target and link exists.
function(uroce_collect_targets dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    uroce_collect_targets(${sub} sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# The values of target t's properties (the arguments after `out`), as one list in `out`.
function(uroce_target_values t out)
  set(values "")
  foreach(prop ${ARGN})
    get_target_property(v ${t} ${prop})
    if(v)
      list(APPEND values ${v})
    endif()
  endforeach()
  set(${out} "${values}" PARENT_SCOPE)
endfunction()

function(uroce_write_targets file)
  uroce_collect_targets(${CMAKE_SOURCE_DIR} targets)
  set(text "")
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    get_target_property(dir ${t} SOURCE_DIR)
    uroce_target_values(${t} links LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    uroce_target_values(${t} incs INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES)
    string(APPEND text "${t}\t${type}\t${dir}\t${links}\t${incs}\n")
  endforeach()
  file(WRITE ${file} "${text}")
endfunction()
