// Values a job (resources.slurm, resources.kubernetes) or acceld's flags (--slurm-time) hand to
// a cluster, checked the way the cluster reads them, so a value acceld accepts at submit is one
// the cluster takes instead of a gang that fails at launch (or, for a time limit, one Slurm's
// int arithmetic wraps around).
//
// The errors below say what is wrong with the value alone ("'lots' is not ..."); callers put
// the key or flag in front.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace accel::job {

// Slurm's --time (sbatch(1), Slurm's time_str2secs): "minutes", "minutes:seconds",
// "hours:minutes:seconds", "days-hours", "days-hours:minutes", "days-hours:minutes:seconds",
// digits only; 0 and UNLIMITED / INFINITE (any case) mean no limit. Minutes and seconds after
// the first field are 0-59, hours after a day count 0-23; the first field is any count. The
// whole is at most kMaxSlurmTimeDays: longer is a typo (use UNLIMITED), and past about 24855
// days Slurm's seconds overflow an int.
inline constexpr int kMaxSlurmTimeDays = 365;
[[nodiscard]] absl::Status CheckSlurmTime(const std::string& v);

// A Kubernetes resource quantity as apimachinery's resource.ParseQuantity reads it: an optional
// sign, digits with at most one '.', then one suffix: none, a decimal SI one (n u m k M G T P E),
// a binary SI one (Ki Mi Gi Ti Pi Ei) or a decimal exponent (e3, E-2). On top of the syntax,
// what a pod's request must be: positive; cpu at least 1m and no finer than 1m (Kubernetes
// refuses finer precision); memory at least one byte ("100m" is a tenth of a byte: a typo for
// "100Mi"); either below 2^63 millicores or bytes.
enum class QuantityOf { kCpu, kMemory };
[[nodiscard]] absl::Status CheckKubernetesQuantity(const std::string& v, QuantityOf what);

}  // namespace accel::job
