/** Milliseconds and seconds in the trajectory keep three decimals. */
export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
