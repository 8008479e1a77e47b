//===- NormalSampler.h - reproducible normal samples -------------*- C++
//-*-===//
//
// The checks' inputs: normal samples from a fixed generator and a
// hand-written Box-Muller transform, so that a seed gives the same inputs
// with every standard library (std::normal_distribution's algorithm is the
// library's choice).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_NORMALSAMPLER_H
#define KFUSE_INTERPRETER_NORMALSAMPLER_H

#include <cmath>
#include <cstdint>
#include <random>

namespace kfuse {

class NormalSampler {
public:
  explicit NormalSampler(uint64_t seed) : engine(seed) {}

  /// A sample of the normal distribution of mean 0 and `stddev`.
  double sample(double stddev = 1.0) {
    if (hasSpare) {
      hasSpare = false;
      return spare * stddev;
    }
    double u1 = uniform(), u2 = uniform();
    double radius = std::sqrt(-2.0 * std::log(u1));
    double angle = 2.0 * M_PI * u2;
    spare = radius * std::sin(angle);
    hasSpare = true;
    return radius * std::cos(angle) * stddev;
  }

private:
  /// Uniform in (0, 1].
  double uniform() {
    return static_cast<double>((engine() >> 11) + 1) * 0x1p-53;
  }

  std::mt19937_64 engine;
  double spare = 0.0;
  bool hasSpare = false;
};

} // namespace kfuse

#endif // KFUSE_INTERPRETER_NORMALSAMPLER_H
