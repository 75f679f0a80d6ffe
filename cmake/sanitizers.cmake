# Applies UROCE_SANITIZE (e.g. "address,undefined") to everything built after this point.
if(UROCE_SANITIZE)
  add_compile_options(-fsanitize=${UROCE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${UROCE_SANITIZE})
endif()
if(UROCE_SANITIZE MATCHES "thread")
  # GCC warns (-Wtsan) that TSan does not model std::atomic_thread_fence, which the stats
  # segment's seqlock uses (lib/stats layout.h); its racy reads are of relaxed atomics, which
  # TSan does model, so the warning is not an error here.
  add_compile_options(-Wno-tsan)
endif()
