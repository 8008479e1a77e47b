# Debian builds LLVM with LLVM_LINK_LLVM_DYLIB: every exported MLIR archive lists
# the shared `LLVM` target as an interface dependency, and LLVMSupport lists
# z3/zstd shared libraries. A fully static tool must rewrite those edges to the
# LLVM archives themselves so that the result needs only libc, libstdc++, libm,
# libz and libgcc_s (the GPU machine has no libLLVM.so and no libz3).
function(kfuse_use_static_llvm)
  foreach(target IN LISTS MLIR_EXPORTED_TARGETS)
    if(NOT TARGET ${target})
      continue()
    endif()
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "STATIC_LIBRARY")
      continue()
    endif()
    get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
    if(NOT deps)
      continue()
    endif()
    set(rewritten)
    foreach(dep IN LISTS deps)
      if(dep STREQUAL "LLVM")
        list(APPEND rewritten LLVMRemarks LLVMBitstreamReader LLVMSupport
             LLVMDemangle)
      elseif(dep MATCHES "Test|MLIRTestDialect")
        # Debian's dialect list carries test libraries linked against
        # libMLIR.so; they are never needed here.
      else()
        list(APPEND rewritten ${dep})
      endif()
    endforeach()
    set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${rewritten}")
  endforeach()
  find_library(KFUSE_ZLIB_STATIC NAMES libz.a REQUIRED)
  set_target_properties(LLVMSupport PROPERTIES
    INTERFACE_LINK_LIBRARIES "rt;dl;m;${KFUSE_ZLIB_STATIC};LLVMDemangle")
endfunction()
