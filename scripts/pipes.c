// Issue rates of the Q8_0 prefill's instructions on this CPU: independent
// ymm vpdpbusd, vfmadd231ps, the two paired, and the pair plus a
// vcvtdq2ps (the reference's order needs one of each per output and
// 32-block). Used for docs/PERFORMANCE.md (tenth session: the pair takes
// one cycle, i.e. the two share two pipes). Needs AVX-512 VNNI and VL.
//
//   gcc -O2 -mavx2 -mfma -mavx512f -mavx512vl -mavx512vnni scripts/pipes.c -o pipes && ./pipes
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define N 200000000L
int main(){
  __m256i a=_mm256_set1_epi8(3), b=_mm256_set1_epi8(5);
  __m256 x=_mm256_set1_ps(1.0001f), y=_mm256_set1_ps(0.9999f);
  double t0,t; 
  // calibrate: dependent chain of adds (latency 1 cycle int add) 
  { long s=0; t0=now(); for(long i=0;i<N;i++){ __asm__ volatile("add $1, %0" : "+r"(s)); } t=now()-t0; printf("int add chain: %.3f ns/iter (=1 cycle) -> %.2f GHz\n", t/N*1e9, N/t/1e9); }
#define R8(X) X X X X X X X X
  { __m256i c0=a,c1=a,c2=a,c3=a,c4=a,c5=a,c6=a,c7=a; t0=now();
    for(long i=0;i<N/8;i++){ 
      __asm__ volatile("vpdpbusd %[b],%[a],%[c0]\n vpdpbusd %[b],%[a],%[c1]\n vpdpbusd %[b],%[a],%[c2]\n vpdpbusd %[b],%[a],%[c3]\n vpdpbusd %[b],%[a],%[c4]\n vpdpbusd %[b],%[a],%[c5]\n vpdpbusd %[b],%[a],%[c6]\n vpdpbusd %[b],%[a],%[c7]\n"
      : [c0]"+v"(c0),[c1]"+v"(c1),[c2]"+v"(c2),[c3]"+v"(c3),[c4]"+v"(c4),[c5]"+v"(c5),[c6]"+v"(c6),[c7]"+v"(c7) : [a]"v"(a),[b]"v"(b)); }
    t=now()-t0; printf("dpbusd ymm: %.3f ns/op\n", t/N*1e9); }
  { __m256 c0=x,c1=x,c2=x,c3=x,c4=x,c5=x,c6=x,c7=x; t0=now();
    for(long i=0;i<N/8;i++){ 
      __asm__ volatile("vfmadd231ps %[b],%[a],%[c0]\n vfmadd231ps %[b],%[a],%[c1]\n vfmadd231ps %[b],%[a],%[c2]\n vfmadd231ps %[b],%[a],%[c3]\n vfmadd231ps %[b],%[a],%[c4]\n vfmadd231ps %[b],%[a],%[c5]\n vfmadd231ps %[b],%[a],%[c6]\n vfmadd231ps %[b],%[a],%[c7]\n"
      : [c0]"+v"(c0),[c1]"+v"(c1),[c2]"+v"(c2),[c3]"+v"(c3),[c4]"+v"(c4),[c5]"+v"(c5),[c6]"+v"(c6),[c7]"+v"(c7) : [a]"v"(x),[b]"v"(y)); }
    t=now()-t0; printf("fma ymm: %.3f ns/op\n", t/N*1e9); }
  { __m256i c0=a,c1=a,c2=a,c3=a; __m256 f0=x,f1=x,f2=x,f3=x; t0=now();
    for(long i=0;i<N/4;i++){ 
      __asm__ volatile("vpdpbusd %[b],%[a],%[c0]\n vfmadd231ps %[y],%[x],%[f0]\n vpdpbusd %[b],%[a],%[c1]\n vfmadd231ps %[y],%[x],%[f1]\n vpdpbusd %[b],%[a],%[c2]\n vfmadd231ps %[y],%[x],%[f2]\n vpdpbusd %[b],%[a],%[c3]\n vfmadd231ps %[y],%[x],%[f3]\n"
      : [c0]"+v"(c0),[c1]"+v"(c1),[c2]"+v"(c2),[c3]"+v"(c3),[f0]"+v"(f0),[f1]"+v"(f1),[f2]"+v"(f2),[f3]"+v"(f3) : [a]"v"(a),[b]"v"(b),[x]"v"(x),[y]"v"(y)); }
    t=now()-t0; printf("dpbusd+fma pair: %.3f ns/pair\n", t/N*1e9); }
  { __m256i c0=a,c1=a,c2=a,c3=a; __m256 f0=x,f1=x,f2=x,f3=x, g0,g1,g2,g3; t0=now();
    for(long i=0;i<N/4;i++){ 
      __asm__ volatile("vpdpbusd %[b],%[a],%[c0]\n vcvtdq2ps %[c0],%[g0]\n vfmadd231ps %[y],%[x],%[f0]\n vpdpbusd %[b],%[a],%[c1]\n vcvtdq2ps %[c1],%[g1]\n vfmadd231ps %[y],%[x],%[f1]\n vpdpbusd %[b],%[a],%[c2]\n vcvtdq2ps %[c2],%[g2]\n vfmadd231ps %[y],%[x],%[f2]\n vpdpbusd %[b],%[a],%[c3]\n vcvtdq2ps %[c3],%[g3]\n vfmadd231ps %[y],%[x],%[f3]\n"
      : [c0]"+v"(c0),[c1]"+v"(c1),[c2]"+v"(c2),[c3]"+v"(c3),[f0]"+v"(f0),[f1]"+v"(f1),[f2]"+v"(f2),[f3]"+v"(f3),[g0]"=v"(g0),[g1]"=v"(g1),[g2]"=v"(g2),[g3]"=v"(g3) : [a]"v"(a),[b]"v"(b),[x]"v"(x),[y]"v"(y)); }
    t=now()-t0; printf("dpbusd+cvt+fma triple: %.3f ns/triple\n", t/N*1e9); }
  return 0;
}
