# Applies UROCE_SANITIZE (e.g. "address,undefined") to everything built after this point.
if(UROCE_SANITIZE)
  add_compile_options(-fsanitize=${UROCE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${UROCE_SANITIZE})
endif()
