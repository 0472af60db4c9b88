{
  "targets": [
    {
      "target_name": "crl_native",
      "sources": ["src/addon.cc", "src/addon-ops.cc", "src/addon-attention.cc", "src/attention.cc", "src/gemm.cc", "src/gemm-half.cc", "src/logprob.cc", "src/ops.cc", "src/thread-pool.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": ["-std=c++17", "-O3", "-march=<!(node -p \"process.env.CRL_NATIVE_MARCH || 'native'\")", "-fno-math-errno", "-ffp-contract=fast", "-pthread"],
      "ldflags": ["-pthread"],
      "conditions": [["OS=='linux'", { "libraries": ["-ldl"] }]],
      "xcode_settings": {
        "GCC_OPTIMIZATION_LEVEL": "3",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "OTHER_CPLUSPLUSFLAGS": ["-O3", "-mcpu=native", "-ffp-contract=fast"]
      }
    }
  ]
}
