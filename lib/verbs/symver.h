/**
 * @file symver.h
 * @brief Binding of exported functions to rdma-core's symbol versions.
 *
 * A symbol the system libibverbs exports with a default and a compat version
 * (ibv_open_device@@IBVERBS_1.1 and ibv_open_device@IBVERBS_1.0) is implemented by two
 * internally named functions, each bound to its version with .symver; the generated version
 * script lists the name in both nodes. A symbol with one version is defined under its own name
 * and only listed in the script.
 */
#pragma once

#include "verbs/private_abi.h"

#define UROCE_STR2(x) #x
#define UROCE_STR(x) UROCE_STR2(x)

/// Binds impl to name@@node (the version programs link against).
#define UROCE_DEFAULT_VERSION(impl, name, node) __asm__(".symver " #impl ", " #name "@@" node)
/// Binds impl to name@node (a compat version kept for old binaries).
#define UROCE_COMPAT_VERSION(impl, name, node) __asm__(".symver " #impl ", " #name "@" node)

#define UROCE_PRIVATE_NODE "IBVERBS_PRIVATE_" UROCE_STR(UROCE_VERBS_PRIVATE_ABI)

/// Marks a function as exported (the version script decides its node).
#define UROCE_EXPORT extern "C" __attribute__((visibility("default")))
